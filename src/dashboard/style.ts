/** The dashboard's stylesheet: system fonts, WCAG AA contrast (text #1a1a1a on white, links #0645ad),
 * visible focus rings, and a queue in trouble marked by text as well as colour. */
export const DASHBOARD_CSS = `
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,sans-serif;color:#1a1a1a;background:#fff}
header{display:flex;gap:1rem;align-items:center;padding:.6rem 1rem;background:#13233a;color:#fff}
header a{color:#fff;font-weight:600;text-decoration:none}header nav{flex:1}
main{padding:1rem;max-width:1200px;margin:auto}a{color:#0645ad}
:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{padding:.3rem .5rem;border-bottom:1px solid #ccc;text-align:left;vertical-align:top}
th{background:#f2f4f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.spark{white-space:nowrap}td.spark svg{vertical-align:middle}tr.trouble{background:#fdecea}.badge{display:inline-block;padding:0 .4rem;border-radius:3px;background:#b3261e;color:#fff;font-size:.8rem}
button{font:inherit;padding:.3rem .7rem;border:1px solid #13233a;background:#fff;color:#13233a;border-radius:4px;cursor:pointer}
button.danger{border-color:#b3261e;color:#b3261e}button.primary{background:#13233a;color:#fff}
input,select{font:inherit;padding:.25rem .4rem;border:1px solid #767676;border-radius:3px}
label{display:inline-block;margin:.2rem .6rem .2rem 0}
.field-error{color:#b3261e;font-weight:600;margin-left:.4rem}[aria-invalid=true]{border-color:#b3261e;border-width:2px}
#notice:not(:empty){padding:.5rem .8rem;margin:.5rem 0;border-left:4px solid #13233a;background:#eef2f7}
#notice.error{border-color:#b3261e;background:#fdecea}
section{margin:1.2rem 0}h1{font-size:1.4rem;margin:.3rem 0}h2{font-size:1.1rem;margin:.6rem 0 .3rem}
dl.counts{display:flex;gap:1.4rem;flex-wrap:wrap;margin:.4rem 0}dl.counts dt{font-size:.8rem;color:#4a4a4a}dl.counts dd{margin:0;font-size:1.3rem;font-weight:600}
pre{background:#f6f8fa;padding:.5rem;overflow:auto;max-height:20rem}progress{width:18rem;height:1.1rem}
svg.chart{width:100%;height:180px;border:1px solid #ddd}.legend span{margin-right:1rem}
.sr{position:absolute;left:-9999px}.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
form.config label{display:block}form.config input,form.config select{margin-left:.4rem}
`;
