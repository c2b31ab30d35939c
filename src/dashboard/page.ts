import { DASHBOARD_CLIENT_JS } from "./client-bundle.generated";
import { DASHBOARD_CSS } from "./style";

/**
 * The whole dashboard: one HTML document with its style and script inline (about 8 KB gzipped;
 * docs/dashboard.md says how it is measured), served by the Worker itself at /dashboard. It holds no data
 * and no token. The script is the browser code of src/dashboard/client/, bundled as text by
 * scripts/build-dashboard.mjs: the Worker takes only that text, never the browser modules.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>edgeq dashboard</title>
<style>${DASHBOARD_CSS}</style>
</head>
<body>
<header><nav><a href="#/">edgeq</a></nav><button id="signout" hidden>Sign out</button></header>
<main>
<div id="notice" role="status" aria-live="polite"></div>
<div id="view"></div>
</main>
<script>${DASHBOARD_CLIENT_JS}</script>
</body>
</html>`;
