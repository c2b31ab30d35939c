/** The API reference's stylesheet: system fonts, the dashboard's colours (WCAG AA contrast: text #1a1a1a on
 * white, links #0645ad), a sticky list of operations beside them, visible focus rings. */
export const REFERENCE_CSS = `
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,sans-serif;color:#1a1a1a;background:#fff}
header{position:sticky;top:0;z-index:2;display:flex;flex-wrap:wrap;gap:1rem;align-items:center;padding:.5rem 1rem;background:#13233a;color:#fff}
header a{color:#fff}header form{margin-left:auto;display:flex;gap:.4rem;align-items:center}
a{color:#0645ad}:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
.layout{display:flex;align-items:flex-start}
nav{position:sticky;top:3rem;width:21rem;flex:none;max-height:calc(100vh - 3rem);overflow:auto;padding:.5rem 1rem;border-right:1px solid #ddd;font-size:13px}
nav h2{font-size:.8rem;text-transform:uppercase;color:#4a4a4a;margin:.8rem 0 .2rem}nav ul{list-style:none;margin:0;padding:0}nav li{margin:.1rem 0}
nav a{text-decoration:none;color:#1a1a1a}nav a:hover{text-decoration:underline}
main{flex:1;min-width:0;padding:0 1.5rem 4rem;max-width:62rem}
section.tag>h2{font-size:1.3rem;margin:1.6rem 0 .4rem;border-bottom:2px solid #13233a;text-transform:capitalize}
section.op{border:1px solid #d0d7de;border-radius:6px;padding:.4rem 1rem;margin:1rem 0}
section.op h3{font-size:1.05rem;margin:.4rem 0}h4{margin:.8rem 0 .3rem}h5{margin:.5rem 0 .2rem;font-size:.85rem}
.method{display:inline-block;min-width:3.6rem;text-align:center;font:600 12px/1.6 ui-monospace,monospace;border-radius:3px;color:#fff;background:#4a4a4a}
.m-get{background:#0b6e3f}.m-post{background:#0645ad}.m-put{background:#8a4b00}.m-delete{background:#b3261e}.m-patch{background:#6b3fa0}
.type{font:13px ui-monospace,monospace;color:#5b2b8a}.req{font-size:12px;color:#b3261e;font-weight:600}.desc{color:#333}.notes{color:#4a4a4a;font-size:13px}
ul.props,ul.options{margin:.2rem 0;padding-left:1.2rem;border-left:1px solid #e1e4e8}ul.props li,ul.options li{margin:.25rem 0}
li.closed{list-style:none;color:#4a4a4a;font-size:12px}.opt{font-size:13px;font-weight:600}
table.params{border-collapse:collapse;width:100%}table.params td,table.params th{border-bottom:1px solid #ddd;padding:.3rem;text-align:left;vertical-align:top}
pre{background:#f6f8fa;padding:.5rem;overflow:auto;max-height:22rem;font-size:13px;margin:.2rem 0}
details.response{margin:.2rem 0}details summary{cursor:pointer}
.status{font:600 13px ui-monospace,monospace;padding:0 .3rem;border-radius:3px;background:#eee}.s2,.s1{background:#d5f0df}.s4{background:#fde2c8}.s5{background:#fdecea}
details.try{margin:.6rem 0;padding:.4rem .6rem;background:#f2f4f7;border-radius:4px}details.try summary{font-weight:600}
form.try-it label{display:block;margin:.3rem 0}form.try-it input{font:13px ui-monospace,monospace;padding:.2rem .4rem;min-width:18rem}
form.try-it textarea{display:block;width:100%;font:13px ui-monospace,monospace}
button{font:inherit;padding:.25rem .7rem;border:1px solid #13233a;background:#fff;color:#13233a;border-radius:4px;cursor:pointer}
input{font:inherit;padding:.2rem .4rem;border:1px solid #767676;border-radius:3px}
output.result{display:block;margin-top:.4rem}
`;
