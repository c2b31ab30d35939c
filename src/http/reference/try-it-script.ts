/**
 * The API reference's only script: the token box (sessionStorage, under the dashboard's key, so signing in
 * to either signs in to both) and the try-it forms, which send the request to this origin and show the
 * status and body. Plain ES2020 without template literals, so it can live in this string.
 */
export const TRY_IT_JS = String.raw`
"use strict";
var TOKEN_KEY = "edgeq.token";
var tokenInput = document.getElementById("token");
var authState = document.getElementById("auth-state");
function showAuth() {
  var has = !!sessionStorage.getItem(TOKEN_KEY);
  authState.textContent = has ? "token set" : "no token";
  tokenInput.value = "";
  tokenInput.placeholder = has ? "(kept in this tab)" : "EDGEQ_TOKEN";
}
document.getElementById("auth").onsubmit = function (ev) {
  ev.preventDefault();
  var value = tokenInput.value.trim();
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  showAuth();
};
document.getElementById("forget").onclick = function () { sessionStorage.removeItem(TOKEN_KEY); showAuth(); };
showAuth();

function show(out, status, text, ms) {
  out.setAttribute("data-status", String(status));
  var head = document.createElement("p");
  var badge = document.createElement("span");
  badge.className = "status s" + String(status).charAt(0);
  badge.textContent = status === 0 ? "error" : String(status);
  head.appendChild(badge);
  head.appendChild(document.createTextNode(ms === null ? "" : " in " + ms + " ms"));
  var pre = document.createElement("pre");
  pre.textContent = text;
  out.replaceChildren(head, pre);
}

async function send(form) {
  var out = form.querySelector("output");
  var path = form.getAttribute("data-path");
  var query = new URLSearchParams();
  var missing = [];
  form.querySelectorAll("input[data-in]").forEach(function (input) {
    var v = input.value.trim();
    if (input.getAttribute("data-in") === "path") {
      if (!v) missing.push(input.name);
      path = path.replace("{" + input.name + "}", encodeURIComponent(v));
    } else if (v) query.set(input.name, v);
  });
  if (missing.length) { show(out, 0, "Fill in " + missing.join(", "), null); return; }
  var init = { method: form.getAttribute("data-method"), headers: {} };
  var area = form.querySelector("textarea");
  if (area) {
    try { JSON.parse(area.value); } catch (e) { show(out, 0, "The body is not JSON: " + e.message, null); return; }
    init.body = area.value;
    init.headers["Content-Type"] = "application/json";
  }
  var token = sessionStorage.getItem(TOKEN_KEY);
  if (form.getAttribute("data-auth") === "bearer" && token) init.headers.Authorization = "Bearer " + token;
  var qs = query.toString();
  var started = performance.now();
  try {
    var res = await fetch(path + (qs ? "?" + qs : ""), init);
    var text = await res.text();
    var ms = Math.round(performance.now() - started);
    try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON: shown as it came */ }
    show(out, res.status, text, ms);
  } catch (e) {
    show(out, 0, "The request failed: " + e.message, null);
  }
}
document.querySelectorAll("form.try-it").forEach(function (form) {
  form.onsubmit = function (ev) { ev.preventDefault(); send(form); };
});
`;
