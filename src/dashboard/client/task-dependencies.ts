import { api, must } from "./api";
import { esc } from "./dom";
import type { PageLife } from "./page-life";
import type { DependencyList, DependentList, Task } from "./wire";

/** Rows per page of either list: a screenful; the API's own page is at most 100 (MAX_DEPENDENCY_PAGE). */
const PAGE_SIZE = "25";

/** Where each list is paged to: null is its first page. Kept by the task page across its re-reads. */
export interface DependencyCursors {
  dependencies: string | null;
  dependents: string | null;
}

/** One page of each list, as shown: the dependencies are null for a task enqueued without any. */
export interface DependencyPages {
  dependencies: DependencyList | null;
  dependents: DependentList;
}

/**
 * The pages of a task's dependencies and dependents the cursors point at (GET /v1/tasks/{id}/dependencies
 * and /dependents), read with the task so that the page paints once with everything.
 *
 * @example
 * const pages = await readDependencyPages(task, cursors, signal);
 */
export async function readDependencyPages(
  task: Task,
  cursors: DependencyCursors,
  signal: AbortSignal,
): Promise<DependencyPages> {
  const path = `/v1/tasks/${encodeURIComponent(task.id)}`;
  const query = (cursor: string | null) => {
    const q = new URLSearchParams({ limit: PAGE_SIZE });
    if (cursor) q.set("cursor", cursor);
    return q.toString();
  };
  const [dependencies, dependents] = await Promise.all([
    task.dependency_count === null
      ? null
      : api<DependencyList>("GET", `${path}/dependencies?${query(cursors.dependencies)}`, { signal }).then(must),
    api<DependentList>("GET", `${path}/dependents?${query(cursors.dependents)}`, { signal }).then(must),
  ]);
  return { dependencies, dependents };
}

/** The join's progress line: how many of its dependencies have finished, as a bar; empty without any. */
export function joinProgressHtml(task: Task): string {
  if (task.dependency_count === null) return "";
  const total = task.dependency_count;
  const finished = total - (task.waiting_on ?? 0);
  return (
    `<p><label for="join-progress">Dependencies finished</label> <progress id="join-progress" max="${total}" value="${finished}">${finished} of ${total}</progress> ` +
    `<span id="join-count">${finished} of ${total}</span>${task.state === "waiting" ? " — waits until every one has finished" : ""}` +
    (task.on_dependency_failure
      ? `; one ending dead, cancelled or expired: <b>${esc(task.on_dependency_failure)}</b>`
      : "") +
    `</p>`
  );
}

/** Both lists, each a table of links to its tasks with their states, and its paging buttons. */
export function dependencyListsHtml(task: Task, pages: DependencyPages, cursors: DependencyCursors): string {
  const link = (id: string) => `<a href="#/task/${encodeURIComponent(id)}">${esc(id)}</a>`;
  const paging = (list: keyof DependencyCursors, next: string | null) =>
    (cursors[list] ? `<button data-first="${list}">First page</button> ` : "") +
    (next ? `<button data-next="${list}" data-cursor="${esc(next)}">Next page</button>` : "");
  let html = "";
  if (pages.dependencies) {
    const rows = pages.dependencies.dependencies
      .map(
        (d) =>
          `<tr><td>${link(d.id)}</td><td>${esc(d.queue ?? "-")}</td><td>${esc(d.type ?? "-")}</td><td>${esc(d.state ?? "pruned")}</td><td>${resultCell(d)}</td></tr>`,
      )
      .join("");
    html +=
      `<section aria-labelledby="dependencies-h"><h2 id="dependencies-h">Dependencies (${task.dependency_count})</h2>` +
      `<table aria-label="Dependencies"><thead><tr><th scope="col">Task</th><th scope="col">Queue</th><th scope="col">Type</th><th scope="col">State</th><th scope="col">Result</th></tr></thead>` +
      `<tbody id="dependencies">${rows || `<tr><td colspan="5">None on this page.</td></tr>`}</tbody></table>` +
      `${paging("dependencies", pages.dependencies.next_cursor)}</section>`;
  }
  const rows = pages.dependents.dependents
    .map(
      (d) =>
        `<tr><td>${link(d.id)}</td><td>${esc(d.queue)}</td><td>${esc(d.type)}</td><td>${esc(d.state)}</td><td>${esc(d.outcome ?? "-")}</td></tr>`,
    )
    .join("");
  if (rows || cursors.dependents) {
    html +=
      `<section aria-labelledby="dependents-h"><h2 id="dependents-h">Dependents</h2>` +
      `<table aria-label="Dependents"><thead><tr><th scope="col">Task</th><th scope="col">Queue</th><th scope="col">Type</th><th scope="col">State</th><th scope="col">Its finishing counted as</th></tr></thead>` +
      `<tbody id="dependents">${rows || `<tr><td colspan="5">None on this page.</td></tr>`}</tbody></table>` +
      `${paging("dependents", pages.dependents.next_cursor)}</section>`;
  }
  return html;
}

/** A dependency's result in a line: its JSON (shortened), or its size when the API left it out. */
function resultCell(d: DependencyList["dependencies"][number]): string {
  if (d.result !== null && d.result !== undefined) {
    const json = JSON.stringify(d.result);
    return `<code>${esc(json.length > 80 ? `${json.slice(0, 79)}…` : json)}</code>`;
  }
  return d.result_bytes === null ? "-" : `${d.result_bytes} bytes (on its page)`;
}

/** Wires the lists' paging buttons: each moves its cursor and reads the page again. */
export function wireDependencyPaging(life: PageLife, cursors: DependencyCursors, reload: () => Promise<void>): void {
  for (const button of life.root.querySelectorAll<HTMLButtonElement>("[data-next], [data-first]")) {
    const list = (button.dataset.next ?? button.dataset.first) as keyof DependencyCursors;
    button.onclick = () => {
      cursors[list] = button.dataset.next ? (button.dataset.cursor ?? null) : null;
      life.run(reload);
    };
  }
}
