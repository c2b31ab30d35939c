/**
 * Section 12's queues: fed over the API in both layouts of the served store (docs/design/packs.md,
 * "Serving"), checked in D1 to be so, and read back at the end by state.
 */
import { ulid } from "ulid";
import type { AuditApi } from "./audit-client";
import type { Layout } from "./audit-ledger";
import type { WorkerdBench } from "./workerd-host";

/** Tasks per enqueue call of plain tasks: a full pack (src/engine/packs/, 100 slots). */
const PACK_CALL = 100;
/** Enqueue calls in flight at once while feeding: enough to feed a few thousand tasks in seconds. */
const FEEDERS = 8;

const q = (queue: string) => encodeURIComponent(queue);

async function inParallel<T>(jobs: Array<() => Promise<T>>, width: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const at = next++;
        out[at] = await jobs[at]!();
      }
    }),
  );
  return out;
}

/**
 * Feeds `queue` with `packs` tasks in calls of 100 plain tasks (packs) and `rows` tasks in three shapes that
 * the served store keeps in rows: one task a call, calls of 10 each with a dedupe key, and calls of 10 each
 * with the client's own id. Returns every id answered, with its layout as D1 holds it — and throws if a task
 * is not where the served store's routing puts it.
 */
export async function feedQueue(
  bench: WorkerdBench,
  api: AuditApi,
  queue: string,
  counts: { packs: number; rows: number },
): Promise<Map<string, Layout>> {
  await api.call("PUT", `/v1/queues/${q(queue)}/config`, {
    // Crashes cost an attempt each: high enough that no task dies of the audit's crashes (the soak counts a
    // dead task as lost unless a worker failed it on purpose).
    max_attempts: 100,
    // A lapsed lease comes back after its backoff (10 s at first by default, doubling): 1 s, so the soak's
    // crashed tasks come back within its run.
    backoff_base_s: 1,
    backoff_cap_s: 1,
  });
  type Call = { tasks: Array<Record<string, unknown>>; layout: Layout };
  const calls: Call[] = [];
  for (let n = 0; n < counts.packs; n += PACK_CALL) {
    const size = Math.min(PACK_CALL, counts.packs - n);
    calls.push({ tasks: Array.from({ length: size }, (_, i) => ({ payload: { n: n + i } })), layout: "packs" });
  }
  const third = Math.floor(counts.rows / 3);
  for (let n = 0; n < counts.rows - 2 * third; n++) calls.push({ tasks: [{ payload: { single: n } }], layout: "rows" });
  for (let n = 0; n < third; n += 10) {
    const size = Math.min(10, third - n);
    calls.push({
      tasks: Array.from({ length: size }, (_, i) => ({ payload: { keyed: n + i }, dedupe_key: `${queue}-k${n + i}` })),
      layout: "rows",
    });
    calls.push({
      tasks: Array.from({ length: size }, (_, i) => ({ payload: { own: n + i }, id: ulid() })),
      layout: "rows",
    });
  }
  const answers = await inParallel(
    calls.map((c) => async () => {
      const res = await api.call<{ tasks: Array<{ id: string; deduplicated: boolean }> }>(
        "POST",
        `/v1/queues/${q(queue)}/tasks`,
        { tasks: c.tasks },
      );
      if (res.tasks.some((t) => t.deduplicated)) throw new Error(`audit: ${queue}: a fresh task was deduplicated`);
      return res.tasks.map((t) => [t.id, c.layout] as const);
    }),
    FEEDERS,
  );
  const tasks = new Map<string, Layout>(answers.flat());
  const ids = (layout: Layout) => [...tasks].filter(([, l]) => l === layout).map(([id]) => id);
  const inPacks = await bench.call<{ packs: number; rows: number }>({ op: "audit-layouts", ids: ids("packs") });
  const inRows = await bench.call<{ packs: number; rows: number }>({ op: "audit-layouts", ids: ids("rows") });
  if (inPacks.packs !== counts.packs || inRows.rows !== counts.rows || inPacks.rows + inRows.packs > 0) {
    throw new Error(
      `audit: ${queue}: layouts not as routed: packs ${JSON.stringify(inPacks)}, rows ${JSON.stringify(inRows)}`,
    );
  }
  // Each layout's tasks read back by id through the API.
  for (const id of [ids("packs")[0], ids("rows")[0]].filter((id) => id !== undefined)) {
    const task = await api.call<{ id: string; queue: string }>("GET", `/v1/tasks/${id}`);
    if (task.queue !== queue) throw new Error(`audit: GET /v1/tasks/${id} answered queue ${task.queue}`);
  }
  return tasks;
}

/** The ids of `queue`'s tasks in `state`, listed through the API (both layouts). */
export async function idsInState(api: AuditApi, queue: string, state: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  do {
    const page: { tasks: Array<{ id: string }>; next_cursor: string | null } = await api.call(
      "GET",
      `/v1/queues/${q(queue)}/tasks?state=${state}&limit=100${cursor ? `&cursor=${cursor}` : ""}`,
    );
    for (const t of page.tasks) ids.add(t.id);
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}
