import { api, must } from "./api";
import { esc, isAbort } from "./dom";
import type { PageLife } from "./page-life";
import { Reader } from "./reader";
import type { BulkAnswer, Task, TaskList } from "./wire";

/** Task events come in bursts (a batch enqueue, a worker's acks): the table is re-read once per second
 * of them at most, not once per event. */
const TABLE_RELOAD_MS = 1_000;

/** Rows per page of the table: a screenful or two; the API's own limit is higher. */
const PAGE_SIZE = "50";

/** A task id as the search box takes it: a ULID, any case. */
const TASK_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

interface Filters {
  state: string;
  type: string;
  group: string;
  dedupe_key: string;
}

/**
 * The queue page's tasks table: filters, the search box, cursor pagination and the bulk actions (each
 * asks first, then shows the API's answer and re-reads the table and, through `reloadCounts`, the
 * counts). Wires the page's forms and buttons at once; `read` fills the table.
 */
export function tasksTable(life: PageLife, queue: string, reloadCounts: () => Promise<void>) {
  const path = `/v1/queues/${encodeURIComponent(queue)}`;
  let filters: Filters = { state: "", type: "", group: "", dedupe_key: "" };
  let cursor: string | null = null;
  let reloadPending = false;

  /** The table at `cursor` with the filters: a new question aborts a read under way (Reader). */
  const table = new Reader(life, async (signal) => {
    const query = new URLSearchParams({ limit: PAGE_SIZE });
    for (const [key, value] of Object.entries(filters)) if (value) query.set(key, value);
    if (cursor) query.set("cursor", cursor);
    const page = must(await api<TaskList>("GET", `${path}/tasks?${query.toString()}`, { signal }));
    life.find("tasks", signal).innerHTML =
      page.tasks.map(taskRow).join("") || `<tr><td colspan="8">No tasks match.</td></tr>`;
    const next = life.find<HTMLButtonElement>("next", signal);
    next.hidden = !page.next_cursor;
    next.onclick = () => {
      cursor = page.next_cursor;
      life.run(() => table.read());
    };
  });
  const fromStart = (): Promise<void> => {
    cursor = null;
    return table.read();
  };

  const picked = (): string[] =>
    Array.from(life.root.querySelectorAll<HTMLInputElement>('input[name="pick"]:checked'), (box) => box.value);

  /** Asks, runs, shows the answer (or error), then re-reads counts and table. The calls go on if the page
   * is left meanwhile (the user asked for them); only the page's own painting stops. */
  const act = (question: string, run: () => Promise<string>): void => {
    if (!confirm(question)) return;
    life.run(async () => {
      try {
        life.say(await run());
      } catch (error) {
        if (isAbort(error)) throw error;
        life.say(error instanceof Error ? error.message : String(error), true);
      }
      await Promise.all([reloadCounts(), fromStart()]);
    });
  };
  const onEachPicked = (verb: string, done: string, action: "cancel" | "retry"): void => {
    const ids = picked();
    if (ids.length === 0) return life.say("Select tasks first.", true);
    act(`${verb} ${ids.length} task(s)${action === "retry" ? " now" : ""}?`, async () => {
      for (const id of ids) must(await api<Task>("POST", `/v1/tasks/${id}/${action}`));
      return `${done} ${ids.length}.`;
    });
  };

  life.find("cancel-selected").onclick = () => onEachPicked("Cancel", "Cancelled", "cancel");
  life.find("retry-selected").onclick = () => onEachPicked("Retry", "Retried", "retry");
  life.find("cancel-group").onclick = () => {
    const group = filters.group;
    if (!group) return life.say("Filter by a group first.", true);
    act(`Cancel every live task of group ${group}?`, async () => {
      const answer = must(await api<unknown>("POST", `${path}/cancel`, { body: { group } }));
      return `Cancelled: ${JSON.stringify(answer)}`;
    });
  };
  life.find("redrive-dead").onclick = () =>
    act(`Redrive every dead task of ${queue}?`, async () => {
      const answer = must(await api<{ redriven: number }>("POST", `${path}/redrive`, { body: { state: "dead" } }));
      return `Redriven ${answer.redriven}.`;
    });
  life.find("redrive-expired").onclick = () =>
    act(`Redrive every expired task of ${queue} (its start deadline dropped)?`, async () => {
      const answer = must(await api<{ redriven: number }>("POST", `${path}/redrive`, { body: { state: "expired" } }));
      return `Redriven ${answer.redriven}.`;
    });
  life.find("purge").onclick = () =>
    act(`Delete every finished task of ${queue}? This cannot be undone.`, async () => {
      const answer = must(await api<unknown>("POST", `${path}/purge`, { body: { older_than_s: 0 } }));
      return `Purged: ${JSON.stringify(answer)}`;
    });

  // A bulk action on what the filter form selects (state, type, group): the dry run's count first, in the
  // question; then the action, called again while the API says more remain (each call takes at most 1,000).
  const bulkForm = life.find<HTMLFormElement>("bulk");
  bulkForm.onsubmit = (ev) => {
    ev.preventDefault();
    const action = String(new FormData(bulkForm).get("action") ?? "cancel");
    if (filters.dedupe_key) return life.say("Bulk actions filter by state, type and group; clear the search.", true);
    const filter = Object.fromEntries(
      (["state", "type", "group"] as const).filter((key) => filters[key]).map((key) => [key, filters[key]]),
    );
    const scope =
      Object.entries(filter)
        .map(([key, value]) => `${key} ${value}`)
        .join(", ") || "no filter";
    life.run(async () => {
      const dry = must(await api<BulkAnswer>("POST", `${path}/bulk`, { body: { action, filter, dry_run: true } }));
      if (dry.count === 0) return life.say(`No task to ${action} matches (${scope}).`);
      act(`${action} ${dry.more ? "more than " : ""}${dry.count} task(s) of ${queue} matching ${scope}?`, async () => {
        let count = 0;
        for (let more = true; more;) {
          const answer = must(await api<BulkAnswer>("POST", `${path}/bulk`, { body: { action, filter } }));
          count += answer.count;
          more = answer.more && answer.count > 0;
        }
        return `${action}: ${count} task(s) changed.`;
      });
    });
  };

  const filterForm = life.find<HTMLFormElement>("filters");
  filterForm.onsubmit = (ev) => {
    ev.preventDefault();
    const form = new FormData(filterForm);
    const field = (name: string): string => String(form.get(name) ?? "").trim();
    filters = { state: field("state"), type: field("type"), group: field("group"), dedupe_key: filters.dedupe_key };
    life.run(fromStart);
  };
  // An id opens its task; anything else (or an id-shaped key that is no task) filters the table by dedupe
  // key. Empty clears the search.
  const searchForm = life.find<HTMLFormElement>("search");
  searchForm.onsubmit = (ev) => {
    ev.preventDefault();
    const text = String(new FormData(searchForm).get("q") ?? "").trim();
    life.run(async () => {
      if (TASK_ID.test(text)) {
        const id = text.toUpperCase();
        const found = await api<Task>("GET", `/v1/tasks/${id}`, { signal: life.signal });
        life.check();
        if (found.ok) {
          location.hash = `#/task/${id}`;
          return;
        }
      }
      filters.dedupe_key = text;
      life.say(text ? `Tasks with dedupe key ${text}` : "");
      await fromStart();
    });
  };

  return {
    /** Reads the first page (a new question: aborts a read under way). */
    read: fromStart,
    /** The stream was resynced: back to the first page, after any read under way. */
    refreshFromStart(): void {
      cursor = null;
      table.refresh();
    },
    /** A task event arrived: re-read the page shown within TABLE_RELOAD_MS. */
    reloadSoon(): void {
      if (reloadPending) return;
      reloadPending = true;
      life.later(TABLE_RELOAD_MS, async () => {
        reloadPending = false;
        table.refresh();
      });
    },
  };
}

function taskRow(t: Task): string {
  return (
    `<tr><td><input type="checkbox" name="pick" value="${esc(t.id)}" aria-label="Select ${esc(t.id)}"></td>` +
    `<td><a href="#/task/${esc(t.id)}">${esc(t.id)}</a></td><td>${esc(t.type)}</td><td>${esc(t.state)}</td>` +
    `<td class="n">${t.attempts}/${t.max_attempts}</td><td>${t.progress === null ? "" : `${t.progress}%`}</td>` +
    `<td>${esc(t.group)}</td><td>${esc(t.run_at)}</td></tr>`
  );
}
