import { eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { queues, type QueueRow } from "../db/schema";
import { EdgeqError } from "../contracts/errors";
import type { StoredQueue } from "../contracts/stored-task";
import type { FlowConfig } from "../contracts/flow";

/** A push queue's rate limit: at most `count` task starts per `per`. */
export interface RateLimit {
  count: number;
  per: "second" | "minute";
}

/** A queue's effective configuration (stored values over defaults). */
export interface QueueConfig {
  max_attempts: number;
  visibility_timeout_s: number;
  backoff_base_s: number;
  backoff_cap_s: number;
  retention_s: number;
  mode: "pull" | "push";
  processor: string | null;
  concurrency: number;
  rate_limit: RateLimit | null;
  max_run_s: number | null;
  /** Flow control by key (docs/flow-control.md); null: none. */
  flow: FlowConfig | null;
}

/**
 * Defaults for a queue without a stored config.
 * - 3 attempts: one try and two retries, enough to ride out a transient fault without hammering a
 *   broken dependency (Cloudflare Queues defaults to 3 as well).
 * - 30 s visibility: long enough for a typical API call or short render, short enough that a crashed
 *   worker's task is back within a minute (SQS also defaults to 30 s).
 * - backoff 10 s base, 1 h cap: retries at ~10 s, 20 s, 40 s ... never waiting more than an hour.
 * - 7 days retention of finished tasks: time to inspect and redrive, bounded storage.
 * - pull mode: a queue runs nothing inside the Worker until it is asked to.
 * - no run-time limit: a tts render of a long book may legitimately run for hours; set one per queue.
 * - concurrency 4: push processors mostly wait on I/O (Workers AI, R2, webhooks); 4 in flight keeps a
 *   coordinator busy without tripping a provider's concurrency limits.
 */
export const DEFAULT_QUEUE_CONFIG: QueueConfig = {
  max_attempts: 3,
  visibility_timeout_s: 30,
  backoff_base_s: 10,
  backoff_cap_s: 3600,
  retention_s: 7 * 24 * 3600,
  mode: "pull",
  processor: null,
  concurrency: 4,
  rate_limit: null,
  max_run_s: null,
  flow: null,
};

const WINDOW_S = { second: 1, minute: 60 } as const;

function fromRow(row: QueueRow | undefined): QueueConfig {
  const d = DEFAULT_QUEUE_CONFIG;
  const rateLimit =
    row?.rateLimitCount != null && row.rateLimitWindowS != null
      ? { count: row.rateLimitCount, per: row.rateLimitWindowS === 60 ? ("minute" as const) : ("second" as const) }
      : null;
  return {
    max_attempts: row?.maxAttempts ?? d.max_attempts,
    visibility_timeout_s: row?.visibilityTimeoutS ?? d.visibility_timeout_s,
    backoff_base_s: row?.backoffBaseS ?? d.backoff_base_s,
    backoff_cap_s: row?.backoffCapS ?? d.backoff_cap_s,
    retention_s: row?.retentionS ?? d.retention_s,
    mode: row?.mode === "push" ? "push" : d.mode,
    processor: row?.processor ?? d.processor,
    concurrency: row?.concurrency ?? d.concurrency,
    rate_limit: rateLimit,
    max_run_s: row?.maxRunS ?? d.max_run_s,
    flow: row?.flow ? (JSON.parse(row.flow) as FlowConfig) : d.flow,
  };
}

/** The effective config of one queue. */
export async function getQueueConfig(db: Db, queue: string): Promise<QueueConfig> {
  return fromRow(await db.select().from(queues).where(eq(queues.name, queue)).get());
}

/**
 * getQueueConfig's read as a statement, for a caller that runs it in a batch of its own (one round trip for
 * the read and its other statements: src/engine/hybrid/split-lease.ts); `queueConfigOf` reads its row, and
 * `configFingerprintOf` the stored config as one value (`fp`, what `configFingerprintSql` compares).
 */
export function queueConfigSql(queue: string): SQL {
  return sql`SELECT ${configColumnsSql("queues", "")}, ${FINGERPRINT} AS fp FROM queues WHERE name = ${queue}`;
}

/** A stored config's columns (QueueRow's names: fromRow's input) and the `queues` columns they come from. */
const CONFIG_COLUMNS: Array<[keyof QueueRow, string]> = [
  ["maxAttempts", "max_attempts"],
  ["visibilityTimeoutS", "visibility_timeout_s"],
  ["backoffBaseS", "backoff_base_s"],
  ["backoffCapS", "backoff_cap_s"],
  ["retentionS", "retention_s"],
  ["mode", "mode"],
  ["processor", "processor"],
  ["concurrency", "concurrency"],
  ["rateLimitCount", "rate_limit_count"],
  ["rateLimitWindowS", "rate_limit_window_s"],
  ["maxRunS", "max_run_s"],
  ["flow", "flow"],
];

/**
 * A stored config's columns of `table` (a name or alias of `queues`), each named `prefix` + its QueueRow name:
 * for a statement that reads a config beside other columns (src/engine/packs/locate.ts joins it to its packs);
 * `queueConfigOfColumns` reads them back. A queue without a row (a LEFT JOIN's nulls) reads as the defaults.
 */
export function configColumnsSql(table: string, prefix: string): SQL {
  return sql.raw(CONFIG_COLUMNS.map(([name, column]) => `${table}.${column} AS ${prefix}${name}`).join(", "));
}

/** A stored config's columns as one JSON value (in SQL, over `queues`). */
const FINGERPRINT = sql.raw(`json_array(${CONFIG_COLUMNS.map(([, column]) => column).join(", ")})`);

/** A queue's stored config as one SQL value to compare (`'none'` without a row: the defaults). */
export function configFingerprintSql(queue: string): SQL {
  return sql`coalesce((SELECT ${FINGERPRINT} FROM queues WHERE name = ${queue}), 'none')`;
}

/** The stored config as one value from `queueConfigSql`'s rows, as `configFingerprintSql` computes it. */
export function configFingerprintOf(rows: unknown[] | undefined): string {
  return String((rows?.[0] as { fp?: string } | undefined)?.fp ?? "none");
}

/** The effective config from `configColumnsSql`'s columns of a row. */
export function queueConfigOfColumns(row: Record<string, unknown>, prefix: string): QueueConfig {
  const stored = Object.fromEntries(CONFIG_COLUMNS.map(([name]) => [name, row[prefix + name] ?? null]));
  return fromRow(stored as unknown as QueueRow);
}

/** The effective config from `queueConfigSql`'s rows (none: the defaults). */
export function queueConfigOf(rows: unknown[] | undefined): QueueConfig {
  return fromRow(rows?.[0] as QueueRow | undefined);
}

/**
 * Why a registered processor cannot run on this Worker (the binding or secret it lacks), or null when it
 * can: what `GET /v1/processors` reports (`ProcessorRegistry.whyUnavailable`), passed in like the names.
 */
export type WhyUnavailable = (processor: string) => string | null;

/**
 * Why a whole config (stored values with a patch over them) is not acceptable, or null. The rules that
 * span fields live here, once, whoever writes a config: the cap is never below the base, a processor is
 * one this Worker has (`processors`: the registry's types, passed in — the engine does not load them), and
 * a push queue's processor is one it can run (`whyUnavailable`; callers that run no processor, such as
 * engine tests, leave it out): accepted, every task of the queue would die on its first run.
 */
export function queueConfigProblem(
  config: QueueConfig,
  processors: readonly string[],
  whyUnavailable: WhyUnavailable = () => null,
): string | null {
  if (config.processor !== null && !processors.includes(config.processor)) {
    return `processor: no processor "${config.processor}" (registered: ${processors.join(", ")})`;
  }
  const unavailable = config.mode === "push" && config.processor !== null ? whyUnavailable(config.processor) : null;
  if (unavailable !== null) {
    return `processor: "${config.processor}" cannot run on this Worker (GET /v1/processors lists it unavailable): ${unavailable}`;
  }
  if (config.backoff_cap_s < config.backoff_base_s) {
    return `backoff_cap_s (${config.backoff_cap_s}) must be at least backoff_base_s (${config.backoff_base_s})`;
  }
  return null;
}

/**
 * Stores the given fields of a queue's config; absent fields keep their stored or default values.
 * `processor: null` and `rate_limit: null` clear those settings. A result that breaks a rule spanning
 * fields (`queueConfigProblem`) is `invalid_request` and stores nothing.
 *
 * @example
 * await putQueueConfig(db, "notes", { mode: "push", concurrency: 8 }, Date.now(), ["tag", "tts"]);
 */
export async function putQueueConfig(
  db: Db,
  queue: string,
  patch: Partial<QueueConfig>,
  now: number,
  processors: readonly string[],
  whyUnavailable?: WhyUnavailable,
): Promise<QueueConfig> {
  const current = await getQueueConfig(db, queue);
  const next: QueueConfig = { ...current, ...patch };
  const problem = queueConfigProblem(next, processors, whyUnavailable);
  if (problem) throw new EdgeqError("invalid_request", problem);
  await storeQueueConfig(db, queue, next, now);
  return next;
}

/**
 * Stores a whole config as given, unchecked: the copy of one already accepted (another shard's, a move's
 * destination). Anything new goes through `putQueueConfig`.
 *
 * @example
 * await storeQueueConfig(otherShardDb, "notes", await getQueueConfig(firstShardDb, "notes"), Date.now());
 */
export async function storeQueueConfig(db: Db, queue: string, next: QueueConfig, now: number): Promise<void> {
  const values = {
    maxAttempts: next.max_attempts,
    visibilityTimeoutS: next.visibility_timeout_s,
    backoffBaseS: next.backoff_base_s,
    backoffCapS: next.backoff_cap_s,
    retentionS: next.retention_s,
    mode: next.mode,
    processor: next.processor,
    concurrency: next.concurrency,
    rateLimitCount: next.rate_limit?.count ?? null,
    rateLimitWindowS: next.rate_limit ? WINDOW_S[next.rate_limit.per] : null,
    maxRunS: next.max_run_s,
    // A queue with a paused key (or paused itself) keeps a flow config, if only {}: its leases must be flow
    // control's (src/engine/flow-control.ts).
    flow: next.flow
      ? JSON.stringify(next.flow)
      : sql`(SELECT '{}' FROM flow_keys WHERE queue = ${queue} AND paused = 1 LIMIT 1)`,
    updatedAt: now,
  };
  // One upsert: read-modify-write of a whole config row; concurrent PUTs of one queue resolve last-write-wins.
  await db
    .insert(queues)
    .values({ name: queue, ...values })
    .onConflictDoUpdate({ target: queues.name, set: { ...values, updatedAt: sql`${now}` } });
}

/** Both ways assignable: the same keys, of the same types. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;

/** The stored queue row is a StoredQueue field for field: a column added to `queues` without its field in
 * src/engine/stored-task.ts does not compile. */
export type RowIsStoredQueue = Holds<Same<QueueRow, StoredQueue>>;

/**
 * A queue's stored record — its config and the SQS endpoint's settings and tags, every column as stored,
 * `updated_at` included — or null when the queue has none (defaults only). One read.
 *
 * @example
 * const record = await readQueueRecord(sourceDb, "emails");
 */
export async function readQueueRecord(db: Db, queue: string): Promise<StoredQueue | null> {
  return (await db.select().from(queues).where(eq(queues.name, queue)).get()) ?? null;
}

/**
 * Writes a queue's record as given, replacing the one stored (one upsert): the other half of a copy
 * (`readQueueRecord`), unchecked.
 *
 * @example
 * await replaceQueueRecord(destinationDb, record);
 */
export async function replaceQueueRecord(db: Db, record: StoredQueue): Promise<void> {
  const { name, ...columns } = record;
  await db
    .insert(queues)
    .values({ name, ...columns })
    .onConflictDoUpdate({ target: queues.name, set: columns });
}

/** The names of the queues with a stored row, unsorted: one read of `queues`' primary key. */
export async function listConfiguredQueues(db: Db): Promise<string[]> {
  return (await db.all<{ name: string }>(sql`SELECT name FROM queues`)).map((row) => row.name);
}
