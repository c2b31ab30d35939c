/**
 * The guarantees audit's side inside the bench worker (section 12, bench/section-audit.ts): requests to
 * AUDIT_HOST go to the Worker itself (`src/index.ts`'s fetch, the HTTP API behind its bearer token, every
 * shard's store the served hybrid of src/shards/shard-set.ts) as separate workerd requests, so concurrent
 * callers are concurrent requests as on Cloudflare; the cron tick runs through the Worker's own `scheduled`
 * handler; and a read of D1 says which layout holds each task (src/engine/hybrid/layout-of-ids.ts).
 */
import worker from "../src/index";
import type { Env } from "../src/env";
import { openDb } from "../src/db/client";
import { packTaskIds } from "../src/engine/hybrid/layout-of-ids";

/** The host Node's audit sends its API requests to (bench/audit-client.ts). */
export const AUDIT_HOST = "edgeq.audit";
/** The bearer token the audited Worker accepts. */
export const AUDIT_TOKEN = "bench-audit-token";

/** The Worker's environment as deployed: production settings, the audit's token, the bench's bindings. */
const auditEnv = (env: Record<string, unknown>): Env =>
  ({ ...env, ENVIRONMENT: "production", EDGEQ_TOKEN: AUDIT_TOKEN }) as unknown as Env;

/** One API request, answered by the Worker as it answers a client. */
export function auditFetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Promise<Response> {
  return Promise.resolve(worker.fetch(request, auditEnv(env), ctx));
}

/** One cron tick as Cloudflare runs it: `scheduled`, its waitUntil work waited for. */
export async function auditTick(env: Record<string, unknown>): Promise<{ ok: true }> {
  const pending: Array<Promise<unknown>> = [];
  const ctx = {
    waitUntil: (p: Promise<unknown>) => void pending.push(p),
    passThroughOnException: () => undefined,
    props: {},
  } as unknown as ExecutionContext;
  const controller = { scheduledTime: Date.now(), cron: "* * * * *", noRetry: () => undefined };
  worker.scheduled(controller as ScheduledController, auditEnv(env), ctx);
  while (pending.length > 0) await Promise.all(pending.splice(0));
  return { ok: true };
}

/** Of `ids`, how many are pack tasks and how many are rows of `tasks` (the rest: in neither). */
export async function auditLayouts(db: D1Database, ids: string[]): Promise<{ packs: number; rows: number }> {
  const onPacks = await packTaskIds(openDb(db), ids);
  const others = ids.filter((id) => !onPacks.has(id));
  let rows = 0;
  // json_each binds the ids as one string: no limit on bound parameters to respect.
  for (let at = 0; at < others.length; at += 1_000) {
    const chunk = JSON.stringify(others.slice(at, at + 1_000));
    const found = await db
      .prepare("SELECT count(*) AS n FROM tasks WHERE id IN (SELECT value FROM json_each(?))")
      .bind(chunk)
      .first<{ n: number }>();
    rows += found?.n ?? 0;
  }
  return { packs: onPacks.size, rows };
}
