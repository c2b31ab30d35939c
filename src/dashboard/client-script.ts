/**
 * The dashboard's browser script (plain ES2020, no build step, no library): a hash router over three views
 * (overview, queue, task) that reads /v1 with the token from sessionStorage and follows the events
 * WebSocket (ticket as a subprotocol). Lists refresh every REFRESH_MS at most; everything else is live.
 * Written without template literals so it can live in this string.
 */
export const DASHBOARD_JS = String.raw`
"use strict";
var REFRESH_MS = 10000;
var TOKEN_KEY = "edgeq.token";
var STATES = ["pending", "processing", "completed", "dead", "cancelled"];
var view = document.getElementById("view");
var notice = document.getElementById("notice");
var sockets = [];
var timers = [];

function esc(v) {
  return String(v == null ? "" : v).replace(/[&<>"']/g, function (c) {
    return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
  });
}
function say(text, isError) {
  notice.textContent = text || "";
  notice.className = isError ? "error" : "";
  notice.setAttribute("role", isError ? "alert" : "status");
}
function token() { return sessionStorage.getItem(TOKEN_KEY); }
async function api(method, path, body) {
  var res = await fetch(path, {
    method: method,
    headers: Object.assign({ Authorization: "Bearer " + token() }, body === undefined ? {} : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  var data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (res.status === 401) { sessionStorage.removeItem(TOKEN_KEY); route(); }
  return { ok: res.ok, status: res.status, body: data };
}
function errorText(r) { return r.body && r.body.error ? r.body.error.code + ": " + r.body.error.message : "HTTP " + r.status; }
async function must(r) { r = await r; if (!r.ok) throw new Error(errorText(r)); return r.body; }

/** Follows an events stream; reconnects after a drop with ?after=SEQ, and calls onResync when told to. */
function follow(path, onEvent, onResync) {
  var state = { seq: null, closed: false, ws: null };
  async function connect() {
    if (state.closed) return;
    var t = await api("POST", "/v1/events/tickets", {});
    // The page may have moved on while the ticket was asked for: a closed stream opens no socket.
    if (!t.ok || state.closed) return;
    var url = new URL(path, location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    if (state.seq !== null) url.searchParams.set("after", String(state.seq));
    var ws = new WebSocket(url, ["edgeq.events.v1", "edgeq.ticket." + t.body.ticket]);
    state.ws = ws;
    ws.onmessage = function (m) {
      var e = JSON.parse(m.data);
      if (e.event === "hello") {
        // Live from here on; anything that changed between the page's reads and now is read again.
        if (state.seq === null) { state.seq = e.seq; if (onResync) onResync(); }
        document.body.setAttribute("data-live", "yes");
        return;
      }
      if (e.event === "resync") { state.seq = e.seq; if (onResync) onResync(); return; }
      if (e.event !== "counts") state.seq = Math.max(state.seq || 0, e.seq);
      onEvent(e);
    };
    ws.onclose = function () { document.body.removeAttribute("data-live"); if (!state.closed) setTimeout(connect, 2000); };
  }
  connect();
  var handle = { close: function () { state.closed = true; if (state.ws) state.ws.close(1000); } };
  sockets.push(handle);
  return handle;
}
function every(ms, fn) { timers.push(setInterval(fn, Math.max(ms, REFRESH_MS))); }
function teardown() {
  document.body.removeAttribute("data-live");
  sockets.splice(0).forEach(function (s) { s.close(); });
  timers.splice(0).forEach(clearInterval);
}

function ago(iso) {
  if (!iso) return "-";
  var s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? s + "s" : s < 3600 ? Math.round(s / 60) + "m" : Math.round(s / 3600) + "h";
}
function sparkline(values, label, color) {
  var max = Math.max.apply(null, values.concat([1]));
  var pts = values.map(function (v, i) { return (i * 100 / Math.max(1, values.length - 1)).toFixed(1) + "," + (20 - v * 18 / max).toFixed(1); }).join(" ");
  return '<svg viewBox="0 0 100 20" width="120" height="24" role="img" aria-label="' + esc(label) + '"><polyline fill="none" stroke="' + color + '" stroke-width="1.5" points="' + pts + '"/></svg>';
}
/** Per-minute series filled with zeros for minutes without a counter row. */
function series(minutes, hours, key) {
  var n = hours * 60, out = new Array(n).fill(0), end = Math.floor(Date.now() / 60000);
  minutes.forEach(function (m) { var i = n - 1 - (end - Math.floor(Date.parse(m.minute) / 60000)); if (i >= 0 && i < n) out[i] = m[key]; });
  return out;
}
function countsCells(c) { return STATES.map(function (s) { return '<td class="n" data-state="' + s + '">' + (c[s] || 0) + "</td>"; }).join(""); }

// ---- sign-in ----
function signIn() {
  view.innerHTML = '<h1>Sign in</h1><form id="signin"><p>Paste the API token (EDGEQ_TOKEN). It is kept in this tab only (sessionStorage).</p>' +
    '<label for="token">API token</label><input id="token" type="password" autocomplete="off" required> <button class="primary">Sign in</button></form>';
  document.getElementById("signin").onsubmit = async function (ev) {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    var r = await api("GET", "/v1/queues");
    if (!r.ok) { sessionStorage.removeItem(TOKEN_KEY); say("Sign-in refused: " + errorText(r), true); return; }
    say("");
    route();
  };
  document.getElementById("token").focus();
}

// ---- overview ----
async function overview() {
  view.innerHTML = '<h1>Queues</h1><table aria-label="Queues"><thead><tr><th scope="col">Queue</th>' +
    STATES.map(function (s) { return '<th scope="col">' + s + "</th>"; }).join("") +
    '<th scope="col">Completed/min (1 h)</th><th scope="col">Failures (1 h)</th><th scope="col">Oldest due</th><th scope="col">Health</th></tr></thead><tbody id="queues"></tbody></table>';
  var followed = {};
  async function load() {
    var list = (await must(api("GET", "/v1/queues"))).queues;
    var health = {};
    var h = await api("GET", "/v1/health/queues");
    if (h.ok) h.body.queues.forEach(function (q) { health[q.queue] = q; });
    var rows = await Promise.all(list.map(async function (q) {
      var path = "/v1/queues/" + encodeURIComponent(q.queue);
      var both = await Promise.all([api("GET", path + "/stats"), api("GET", path + "/throughput?hours=1")]);
      var stats = both[0].body || {}, minutes = (both[1].body || { minutes: [] }).minutes;
      var completed = series(minutes, 1, "completed"), failed = series(minutes, 1, "failed");
      var failures = failed.reduce(function (a, b) { return a + b; }, 0);
      var status = health[q.queue] ? health[q.queue].status : "ok";
      var reasons = health[q.queue] ? health[q.queue].reasons.map(function (r) { return r.message; }).join("; ") : "";
      var trouble = status !== "ok" || (q.counts.dead || 0) > 0 || failures > 0;
      return '<tr id="queue-' + esc(q.queue) + '"' + (trouble ? ' class="trouble"' : "") + '><th scope="row"><a href="#/queue/' + encodeURIComponent(q.queue) + '">' + esc(q.queue) + "</a>" +
        (trouble ? ' <span class="badge">in trouble</span>' : "") + "</th>" + countsCells(q.counts) +
        "<td class=\"spark\">" + sparkline(completed, "completed per minute, last hour", "#1b6e3a") + "</td><td class=\"spark\">" + sparkline(failed, failures + " failed attempts in the last hour", "#b3261e") + " " + failures + "</td><td>" + ago(stats.oldest_due_at) + "</td><td>" + esc(status) + (reasons ? '<br><small>' + esc(reasons) + "</small>" : "") + "</td></tr>";
    }));
    document.getElementById("queues").innerHTML = rows.join("") || '<tr><td colspan="10">No queues yet: enqueue a task.</td></tr>';
    list.forEach(function (q) {
      if (followed[q.queue]) return;
      followed[q.queue] = follow("/v1/queues/" + encodeURIComponent(q.queue) + "/events", function (e) {
        if (e.event !== "counts") return;
        var row = document.getElementById("queue-" + e.queue);
        if (row) STATES.forEach(function (s) { row.querySelector('[data-state="' + s + '"]').textContent = e.counts[s]; });
      }, load);
    });
  }
  await load();
  every(REFRESH_MS, load);
}

// ---- queue ----
async function queuePage(queue) {
  var path = "/v1/queues/" + encodeURIComponent(queue);
  var filters = { state: "", type: "", group: "", dedupe_key: "" }, cursor = null, hours = 1;
  view.innerHTML = '<p><a href="#/">All queues</a></p><h1>Queue ' + esc(queue) + '</h1><dl class="counts" id="counts"></dl>' +
    '<section aria-labelledby="chart-h"><h2 id="chart-h">Throughput per minute</h2><div role="group" aria-label="Time range"><button data-hours="1" aria-pressed="true">1 h</button> <button data-hours="24" aria-pressed="false">24 h</button></div>' +
    '<svg class="chart" id="chart" viewBox="0 0 600 160" preserveAspectRatio="none" role="img" aria-label="enqueued, completed and failed per minute"></svg><p id="chart-max"></p>' +
    '<p class="legend"><span><i class="swatch" style="background:#13233a"></i>enqueued</span><span><i class="swatch" style="background:#1b6e3a"></i>completed</span><span><i class="swatch" style="background:#b3261e"></i>failed</span></p></section>' +
    '<section aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2><form id="filters"><label>State <select name="state"><option value="">any</option>' +
    STATES.map(function (s) { return "<option>" + s + "</option>"; }).join("") + '</select></label><label>Type <input name="type" size="10"></label><label>Group <input name="group" size="10"></label><button>Filter</button></form>' +
    '<form id="search"><label>Find task by id or dedupe key <input name="q" size="28"></label><button>Find</button></form>' +
    '<p><button id="cancel-selected" class="danger">Cancel selected</button> <button id="retry-selected">Retry selected</button> <button id="cancel-group" class="danger">Cancel group</button> <button id="redrive-dead">Redrive dead</button> <button id="purge" class="danger">Purge finished</button></p>' +
    '<table aria-label="Tasks"><thead><tr><th scope="col"><span class="sr">Select</span></th><th scope="col">Task</th><th scope="col">Type</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Progress</th><th scope="col">Group</th><th scope="col">Run at</th></tr></thead><tbody id="tasks"></tbody></table>' +
    '<button id="next" hidden>Next page</button></section>' +
    '<section aria-labelledby="config-h"><h2 id="config-h">Configuration</h2><form id="config" class="config"></form></section>';

  function renderCounts(c) {
    document.getElementById("counts").innerHTML = STATES.map(function (s) { return "<div><dt>" + s + '</dt><dd id="count-' + s + '">' + (c[s] || 0) + "</dd></div>"; }).join("");
  }
  async function loadCounts() { renderCounts((await must(api("GET", path + "/stats"))).counts); }
  async function loadChart() {
    var minutes = (await must(api("GET", path + "/throughput?hours=" + hours))).minutes;
    var keys = [["enqueued", "#13233a"], ["completed", "#1b6e3a"], ["failed", "#b3261e"]];
    var all = keys.map(function (k) { return series(minutes, hours, k[0]); });
    var max = Math.max.apply(null, [1].concat(all.map(function (s) { return Math.max.apply(null, s); })));
    document.getElementById("chart").innerHTML = all.map(function (s, j) {
      var pts = s.map(function (v, i) { return (i * 600 / (s.length - 1)).toFixed(1) + "," + (155 - v * 145 / max).toFixed(1); }).join(" ");
      return '<polyline fill="none" stroke-width="2" stroke="' + keys[j][1] + '" points="' + pts + '"><title>' + keys[j][0] + "</title></polyline>";
    }).join("");
    document.getElementById("chart-max").textContent = "Scale: 0 to " + max + " per minute, last " + hours + " h.";
  }
  async function loadTasks(reset) {
    if (reset) cursor = null;
    var q = new URLSearchParams({ limit: "50" });
    Object.keys(filters).forEach(function (k) { if (filters[k]) q.set(k, filters[k]); });
    if (cursor) q.set("cursor", cursor);
    var page = await must(api("GET", path + "/tasks?" + q));
    document.getElementById("tasks").innerHTML = page.tasks.map(function (t) {
      return '<tr><td><input type="checkbox" name="pick" value="' + esc(t.id) + '" aria-label="Select ' + esc(t.id) + '"></td><td><a href="#/task/' + esc(t.id) + '">' + esc(t.id) + "</a></td><td>" + esc(t.type) + "</td><td>" + esc(t.state) +
        '</td><td class="n">' + t.attempts + "/" + t.max_attempts + "</td><td>" + (t.progress == null ? "" : t.progress + "%") + "</td><td>" + esc(t.group) + "</td><td>" + esc(t.run_at) + "</td></tr>";
    }).join("") || '<tr><td colspan="8">No tasks match.</td></tr>';
    var next = document.getElementById("next");
    next.hidden = !page.next_cursor;
    next.onclick = function () { cursor = page.next_cursor; loadTasks(false); };
  }
  async function loadConfig() {
    var config = await must(api("GET", path + "/config"));
    var form = document.getElementById("config");
    form.innerHTML = Object.keys(config).map(function (k) {
      var v = config[k];
      var input = k === "mode" ? '<select id="cfg-' + k + '" name="' + k + '"><option' + (v === "pull" ? " selected" : "") + ">pull</option><option" + (v === "push" ? " selected" : "") + ">push</option></select>"
        : '<input id="cfg-' + k + '" name="' + k + '" data-kind="' + (typeof v === "number" ? "number" : typeof v === "object" && v !== null ? "json" : "text") + '" value="' + esc(typeof v === "object" && v !== null ? JSON.stringify(v) : v) + '" aria-describedby="err-' + k + '">';
      return '<label for="cfg-' + k + '">' + esc(k) + "</label>" + input + '<span class="field-error" id="err-' + k + '"></span>';
    }).join("") + '<p><button class="primary">Save configuration</button></p>';
    form.onsubmit = async function (ev) {
      ev.preventDefault();
      var patch = {};
      Object.keys(config).forEach(function (k) {
        var el = document.getElementById("cfg-" + k), raw = el.value.trim(), kind = el.getAttribute("data-kind");
        var before = typeof config[k] === "object" && config[k] !== null ? JSON.stringify(config[k]) : String(config[k] == null ? "" : config[k]);
        if (raw === before) return;
        if (raw === "") patch[k] = null;
        else if (kind === "number") patch[k] = Number.isNaN(Number(raw)) ? raw : Number(raw);
        else if (kind === "json") { try { patch[k] = JSON.parse(raw); } catch (e) { patch[k] = raw; } }
        else patch[k] = raw;
      });
      form.querySelectorAll(".field-error").forEach(function (e) { e.textContent = ""; });
      form.querySelectorAll("[aria-invalid]").forEach(function (e) { e.removeAttribute("aria-invalid"); });
      var r = await api("PUT", path + "/config", patch);
      if (r.ok) { config = r.body; say("Configuration saved."); return; }
      var message = errorText(r), field = Object.keys(config).find(function (k) { return message.indexOf(k) >= 0; });
      if (field) {
        document.getElementById("err-" + field).textContent = r.body.error.message;
        document.getElementById("cfg-" + field).setAttribute("aria-invalid", "true");
        document.getElementById("cfg-" + field).focus();
      }
      say("Not saved: " + message, true);
    };
  }
  function picked() { return Array.from(document.querySelectorAll('input[name="pick"]:checked')).map(function (e) { return e.value; }); }
  async function act(question, run) {
    if (!confirm(question)) return;
    try { say(await run()); } catch (e) { say(e.message, true); }
    await Promise.all([loadCounts(), loadTasks(true)]);
  }
  document.getElementById("cancel-selected").onclick = function () {
    var ids = picked(); if (!ids.length) return say("Select tasks first.", true);
    act("Cancel " + ids.length + " task(s)?", async function () { for (var id of ids) await must(api("POST", "/v1/tasks/" + id + "/cancel")); return "Cancelled " + ids.length + "."; });
  };
  document.getElementById("retry-selected").onclick = function () {
    var ids = picked(); if (!ids.length) return say("Select tasks first.", true);
    act("Retry " + ids.length + " task(s) now?", async function () { for (var id of ids) await must(api("POST", "/v1/tasks/" + id + "/retry")); return "Retried " + ids.length + "."; });
  };
  document.getElementById("cancel-group").onclick = function () {
    var group = filters.group; if (!group) return say("Filter by a group first.", true);
    act("Cancel every live task of group " + group + "?", async function () { var r = await must(api("POST", path + "/cancel", { group: group })); return "Cancelled: " + JSON.stringify(r); });
  };
  document.getElementById("redrive-dead").onclick = function () {
    act("Redrive every dead task of " + queue + "?", async function () { var r = await must(api("POST", path + "/redrive", { state: "dead" })); return "Redriven " + r.redriven + "."; });
  };
  document.getElementById("purge").onclick = function () {
    act("Delete every finished task of " + queue + "? This cannot be undone.", async function () { var r = await must(api("POST", path + "/purge", { older_than_s: 0 })); return "Purged: " + JSON.stringify(r); });
  };
  document.getElementById("filters").onsubmit = function (ev) {
    ev.preventDefault();
    var f = new FormData(ev.target);
    filters = { state: f.get("state"), type: f.get("type").trim(), group: f.get("group").trim(), dedupe_key: filters.dedupe_key };
    loadTasks(true);
  };
  // An id opens its task; anything else (or an id-shaped key that is no task) filters the table by dedupe key.
  // Empty clears the search.
  document.getElementById("search").onsubmit = async function (ev) {
    ev.preventDefault();
    var text = new FormData(ev.target).get("q").trim();
    if (/^[0-9A-HJKMNP-TV-Z]{26}$/i.test(text) && (await api("GET", "/v1/tasks/" + text.toUpperCase())).ok) {
      location.hash = "#/task/" + text.toUpperCase();
      return;
    }
    filters.dedupe_key = text;
    say(text ? "Tasks with dedupe key " + text : "");
    loadTasks(true);
  };
  view.querySelectorAll("[data-hours]").forEach(function (b) {
    b.onclick = function () { hours = Number(b.getAttribute("data-hours")); view.querySelectorAll("[data-hours]").forEach(function (o) { o.setAttribute("aria-pressed", String(o === b)); }); loadChart(); };
  });
  await Promise.all([loadCounts(), loadChart(), loadTasks(true), loadConfig()]);
  var reloadSoon = null;
  follow(path + "/events", function (e) {
    if (e.event === "counts") { renderCounts(e.counts); return; }
    if (!reloadSoon) reloadSoon = setTimeout(function () { reloadSoon = null; loadTasks(false); }, 1000);
  }, function () { loadCounts(); loadTasks(true); });
  every(60000, loadChart);
}

// ---- task ----
async function taskPage(id) {
  async function load() {
    var r = await api("GET", "/v1/tasks/" + encodeURIComponent(id));
    if (!r.ok) { view.innerHTML = "<h1>Task " + esc(id) + "</h1>"; say(errorText(r), true); return null; }
    var t = r.body, p = t.state === "completed" ? 100 : t.progress || 0;
    var wait = t.started_at ? (Date.parse(t.started_at) - Date.parse(t.run_at)) / 1000 : null;
    var run = t.started_at ? ((t.finished_at ? Date.parse(t.finished_at) : Date.now()) - Date.parse(t.started_at)) / 1000 : null;
    function fold(title, v, open) { return v == null ? "" : "<details" + (open ? " open" : "") + "><summary>" + title + "</summary><pre>" + esc(JSON.stringify(v, null, 2)) + "</pre></details>"; }
    view.innerHTML = '<p><a href="#/queue/' + encodeURIComponent(t.queue) + '">Queue ' + esc(t.queue) + "</a></p><h1>Task " + esc(t.id) + "</h1>" +
      '<dl class="counts"><div><dt>state</dt><dd id="task-state">' + esc(t.state) + "</dd></div><div><dt>type</dt><dd>" + esc(t.type) + "</dd></div><div><dt>attempts</dt><dd>" + t.attempts + "/" + t.max_attempts + "</dd></div>" +
      "<div><dt>wait</dt><dd>" + (wait == null ? "-" : wait.toFixed(1) + " s") + "</dd></div><div><dt>run</dt><dd>" + (run == null ? "-" : run.toFixed(1) + " s") + "</dd></div></dl>" +
      '<p><label for="task-progress">Progress</label> <progress id="task-progress" max="100" value="' + p + '">' + p + '%</progress> <span id="task-percent">' + p + "%</span> " + esc(t.progress_message) + "</p>" +
      '<p>' + (t.state === "dead" || t.state === "cancelled" ? '<button id="retry" class="primary">Retry now</button> ' : "") + (t.state === "pending" || t.state === "processing" ? '<button id="cancel" class="danger">Cancel</button>' : "") + "</p>" +
      fold("Payload", t.payload, true) + fold("Result", t.result, true) + fold("Checkpoint", t.checkpoint, false) + fold("Then (children enqueued on completion)", t.then, false) +
      '<section aria-labelledby="errors-h"><h2 id="errors-h">Errors (' + t.errors.length + ')</h2><table aria-label="Error history"><thead><tr><th scope="col">Attempt</th><th scope="col">At</th><th scope="col">Kind</th><th scope="col">Message</th></tr></thead><tbody>' +
      t.errors.map(function (e) { return '<tr><td class="n">' + e.attempt + "</td><td>" + esc(e.at) + "</td><td>" + esc(e.kind) + "</td><td>" + esc(e.message) + "</td></tr>"; }).join("") + "</tbody></table></section>" +
      '<section aria-labelledby="artifacts-h"><h2 id="artifacts-h">Artifacts</h2><ul id="artifacts"></ul></section>';
    var retry = document.getElementById("retry");
    if (retry) retry.onclick = async function () {
      if (!confirm("Retry task " + t.id + " now, with its attempts reset?")) return;
      var r2 = await api("POST", "/v1/tasks/" + t.id + "/retry");
      if (!r2.ok) return say("Retry refused: " + errorText(r2), true);
      say("Task sent back to pending."); load();
    };
    var cancel = document.getElementById("cancel");
    if (cancel) cancel.onclick = async function () {
      if (!confirm("Cancel task " + t.id + "?")) return;
      var r3 = await api("POST", "/v1/tasks/" + t.id + "/cancel");
      if (!r3.ok) return say("Cancel refused: " + errorText(r3), true);
      say("Cancelled."); load();
    };
    var arts = await api("GET", "/v1/tasks/" + t.id + "/artifacts");
    var list = arts.ok ? arts.body.artifacts || [] : [];
    document.getElementById("artifacts").innerHTML = list.map(function (a, i) {
      return "<li>" + esc(a.name) + " (" + esc(a.content_type) + ", " + a.size + " bytes)" + (String(a.content_type).indexOf("audio/") === 0 ? ' <button data-play="' + i + '">Load player</button>' : "") + "</li>";
    }).join("") || "<li>None.</li>";
    document.querySelectorAll("[data-play]").forEach(function (b) {
      b.onclick = async function () {
        var a = list[Number(b.getAttribute("data-play"))];
        var res = await fetch("/v1/tasks/" + t.id + "/artifacts/" + encodeURIComponent(a.name), { headers: { Authorization: "Bearer " + token() } });
        var audio = document.createElement("audio");
        audio.controls = true; audio.src = URL.createObjectURL(await res.blob());
        b.replaceWith(audio);
      };
    });
    return t;
  }
  var t = await load();
  if (t) follow("/v1/tasks/" + encodeURIComponent(id) + "/events", function () { load(); }, load);
}

// One page render at a time, in order: a render still waiting on the API when the hash changes would
// otherwise finish after the next one and paint the old page (or its live stream) over it.
var routing = Promise.resolve();
function route() { routing = routing.then(routeNow, routeNow); return routing; }
async function routeNow() {
  teardown();
  if (!token()) return signIn();
  document.getElementById("signout").hidden = false;
  var hash = location.hash.replace(/^#/, "") || "/";
  var m;
  try {
    if ((m = /^\/queue\/(.+)$/.exec(hash))) await queuePage(decodeURIComponent(m[1]));
    else if ((m = /^\/task\/(.+)$/.exec(hash))) await taskPage(decodeURIComponent(m[1]));
    else await overview();
  } catch (e) { say(e.message, true); }
}
document.getElementById("signout").onclick = function () { sessionStorage.removeItem(TOKEN_KEY); location.hash = "#/"; route(); };
window.addEventListener("hashchange", function () { say(""); route(); });
route();
`;
