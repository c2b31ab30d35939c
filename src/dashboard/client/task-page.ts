import { api, errorText, token } from "./api";
import { REVIVABLE_STATES } from "../../contracts/states";
import { esc } from "./dom";
import { follow } from "./events-socket";
import { REFRESH_MS, type PageLife } from "./page-life";
import { Reader } from "./reader";
import {
  dependencyListsHtml,
  joinProgressHtml,
  readDependencyPages,
  wireDependencyPaging,
  type DependencyCursors,
  type DependencyPages,
} from "./task-dependencies";
import type { Artifact, ArtifactList, Task } from "./wire";

/**
 * A task's page (#/task/<id>): state, attempts, wait and run times, a live progress bar, payload / result
 * / checkpoint / then as folded JSON, the error history, artifacts (audio gets a player), its dependencies
 * (with a join's progress) and dependents, paged, and retry or cancel. Re-read whenever the task's events
 * socket reports a change, and every REFRESH_MS while it is waiting: a dependency finishing sends the
 * waiting task no event until it is released.
 */
export async function taskPage(life: PageLife, id: string): Promise<void> {
  const path = `/v1/tasks/${encodeURIComponent(id)}`;
  /** Whether the task exists: only then are its events followed. */
  let found = false;
  /** Whether the task was waiting at the last read: then it is re-read every REFRESH_MS. */
  let waiting = false;
  const cursors: DependencyCursors = { dependencies: null, dependents: null };
  const task = new Reader(life, async (signal) => {
    const answer = await api<Task>("GET", path, { signal });
    if (!answer.ok) {
      life.paint(`<h1>Task ${esc(id)}</h1>`, signal);
      life.say(errorText(answer), true);
      return;
    }
    found = true;
    const shown = answer.body;
    waiting = shown.state === "waiting";
    const [artifacts, pages] = await Promise.all([
      api<ArtifactList>("GET", `${path}/artifacts`, { signal }),
      readDependencyPages(shown, cursors, signal),
    ]);
    const list = artifacts.ok ? artifacts.body.artifacts : [];
    // One paint with everything: a re-read after an event never shows the page half filled.
    life.paint(taskHtml(shown, list, pages, cursors), signal);
    wireActions(life, shown, () => task.read());
    wireDependencyPaging(life, cursors, () => task.read());
    for (const button of life.root.querySelectorAll<HTMLButtonElement>("[data-play]")) {
      const artifact = list[Number(button.dataset.play)];
      if (artifact) button.onclick = () => life.run(() => loadPlayer(life, shown, artifact, button));
    }
  });
  await task.read();
  if (!found) return;
  follow(life, `${path}/events`, { onEvent: () => task.refresh(), onResync: () => task.refresh() });
  life.every(REFRESH_MS, () => {
    if (waiting) task.refresh();
  });
}

function wireActions(life: PageLife, task: Task, reload: () => Promise<unknown>): void {
  const action = (id: string, question: string, verb: "retry" | "cancel", done: string, refused: string) => {
    const button = life.query<HTMLButtonElement>(id);
    if (!button) return;
    button.onclick = () => {
      if (!confirm(question)) return;
      life.run(async () => {
        const answer = await api<Task>("POST", `/v1/tasks/${task.id}/${verb}`);
        if (!answer.ok) return life.say(`${refused}: ${errorText(answer)}`, true);
        life.say(done);
        await reload();
      });
    };
  };
  action(
    "retry",
    `Retry task ${task.id} now, with its attempts reset?`,
    "retry",
    "Task sent back to pending.",
    "Retry refused",
  );
  action("cancel", `Cancel task ${task.id}?`, "cancel", "Cancelled.", "Cancel refused");
}

/** Fetches an audio artifact with the token (an <audio src> could not send it) and plays it from a blob. */
async function loadPlayer(life: PageLife, task: Task, artifact: Artifact, button: HTMLButtonElement): Promise<void> {
  const res = await fetch(`/v1/tasks/${task.id}/artifacts/${encodeURIComponent(artifact.name)}`, {
    headers: { Authorization: `Bearer ${token() ?? ""}` },
    signal: life.signal,
  });
  const blob = await res.blob();
  life.check();
  const audio = document.createElement("audio");
  audio.controls = true;
  audio.src = URL.createObjectURL(blob);
  button.replaceWith(audio);
}

function taskHtml(t: Task, artifacts: Artifact[], pages: DependencyPages, cursors: DependencyCursors): string {
  const progress = t.state === "completed" ? 100 : (t.progress ?? 0);
  const wait = t.started_at ? (Date.parse(t.started_at) - Date.parse(t.run_at)) / 1000 : null;
  const run = t.started_at
    ? ((t.finished_at ? Date.parse(t.finished_at) : Date.now()) - Date.parse(t.started_at)) / 1000
    : null;
  const seconds = (s: number | null) => (s === null ? "-" : `${s.toFixed(1)} s`);
  const fold = (title: string, value: unknown, open: boolean) =>
    value === null || value === undefined
      ? ""
      : `<details${open ? " open" : ""}><summary>${title}</summary><pre>${esc(JSON.stringify(value, null, 2))}</pre></details>`;
  const buttons =
    ((REVIVABLE_STATES as readonly string[]).includes(t.state)
      ? '<button id="retry" class="primary">Retry now</button> '
      : "") +
    (t.state === "pending" || t.state === "waiting" || t.state === "processing"
      ? '<button id="cancel" class="danger">Cancel</button>'
      : "");
  const errors = t.errors
    .map(
      (e) =>
        `<tr><td class="n">${e.attempt}</td><td>${esc(e.at)}</td><td>${esc(e.kind)}</td><td>${esc(e.message)}</td></tr>`,
    )
    .join("");
  return (
    `<p><a href="#/queue/${encodeURIComponent(t.queue)}">Queue ${esc(t.queue)}</a></p><h1>Task ${esc(t.id)}</h1>` +
    `<dl class="counts"><div><dt>state</dt><dd id="task-state">${esc(t.state)}</dd></div><div><dt>type</dt><dd>${esc(t.type)}</dd></div>` +
    `<div><dt>attempts</dt><dd>${t.attempts}/${t.max_attempts}</dd></div>` +
    `<div><dt>wait</dt><dd>${seconds(wait)}</dd></div><div><dt>run</dt><dd>${seconds(run)}</dd></div>` +
    (t.start_by ? `<div><dt>start by</dt><dd id="task-start-by">${esc(t.start_by)}</dd></div>` : "") +
    `</dl>` +
    joinProgressHtml(t) +
    `<p><label for="task-progress">Progress</label> <progress id="task-progress" max="100" value="${progress}">${progress}%</progress> <span id="task-percent">${progress}%</span> ${esc(t.progress_message)}</p>` +
    `<p>${buttons}</p>` +
    fold("Payload", t.payload, true) +
    fold("Result", t.result, true) +
    fold("Checkpoint", t.checkpoint, false) +
    fold("Then (children enqueued on completion)", t.then, false) +
    dependencyListsHtml(t, pages, cursors) +
    `<section aria-labelledby="errors-h"><h2 id="errors-h">Errors (${t.errors.length})</h2><table aria-label="Error history"><thead><tr><th scope="col">Attempt</th><th scope="col">At</th><th scope="col">Kind</th><th scope="col">Message</th></tr></thead><tbody>${errors}</tbody></table></section>` +
    `<section aria-labelledby="artifacts-h"><h2 id="artifacts-h">Artifacts</h2><ul id="artifacts">${artifacts.map(artifactItem).join("") || "<li>None.</li>"}</ul></section>`
  );
}

function artifactItem(a: Artifact, i: number): string {
  const audio = a.content_type.startsWith("audio/") ? ` <button data-play="${i}">Load player</button>` : "";
  return `<li>${esc(a.name)} (${esc(a.content_type)}, ${a.size} bytes)${audio}</li>`;
}
