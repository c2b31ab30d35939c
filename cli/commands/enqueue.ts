import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { monotonicFactory } from "ulid";
import type { z } from "zod";
import { describeZodError } from "../../src/contracts/describe-zod-error";
import { MAX_ATTEMPTS_LIMIT, MAX_PRIORITY } from "../../src/contracts/limits";
import { EnqueuedTaskSchema } from "../../src/contracts/api";
import { DEPENDENCY_FAILURE_POLICIES } from "../../src/contracts/dependencies";
import { expectOk, type Client } from "../client";
import { CliError, EXIT } from "../errors";
import { durationFlag, intFlag, isoFlag, listFlag, positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command, CommandContext } from "../command";
import { plural, ProgressBar, writeJson } from "../output";

/** A task as the API takes it (one line of a JSONL file). */
type NewTask = z.input<typeof EnqueuedTaskSchema>;

/** One task's outcome, as the API reports it. */
interface Outcome {
  id: string;
  state: string;
  deduplicated: boolean;
}

/**
 * Tasks per request. The API takes up to 10,000 tasks and 32 MiB per call, as one D1 transaction; 500
 * small tasks are ~100 KB and one quick transaction, so the single D1 writer is not held for seconds while
 * workers wait to lease, a transient failure re-sends little, and the progress bar moves. CHUNK_BYTES caps
 * a request's body as well: 500 tasks near the 256 KiB payload limit would be 125 MiB.
 */
const CHUNK_TASKS = 500;
const CHUNK_BYTES = 8 * 1024 * 1024;

/** Attempts per chunk when the server is briefly unavailable (429, 5xx, or a dropped connection). */
const MAX_TRIES = 4;

const usage =
  "edgeq enqueue <queue> [<payload-json>] [--file F.jsonl | --file -] [--type T] [--priority N] " +
  "[--delay S | --run-at ISO] [--expires-in S | --start-by ISO] [--dedupe-key K] " +
  "[--idempotency-key K --window S | --debounce-key K --window S | --singleton-key K [--while-running P]] " +
  "[--group G] [--max-attempts N] [--after ID]… [--on-dependency-failure P] [--json]";

/**
 * `edgeq enqueue`: one task whose payload is the argument (or `{}`), or one task per line of a JSONL file
 * (or stdin with `--file -`), each line a task in the API's shape (`{"payload": ..., "priority": ...}`).
 * Flags give defaults for the fields a line lacks. The whole file is read and validated before anything is
 * sent: a bad line exits with EXIT.input naming it, and nothing is enqueued.
 *
 * Tasks without an `id` get a ULID made here, so a chunk re-sent after a dropped connection deduplicates
 * instead of creating its tasks twice (the API treats a known id as a duplicate) — except a task with an
 * idempotency, debounce or singleton key, whose key does that (docs/uniqueness-and-expiry.md).
 *
 * Prints the task ids in input order (a deduplicated task's id is the existing task's), or with --json
 * one document `{ queue, created, deduplicated, tasks: [{ id, state, deduplicated }] }`; a summary goes
 * to stderr. Each request is atomic, the file is not: when one fails, what was enqueued has been printed
 * (with --json as `{ queue, partial: true, tasks }`) and the error names the last line enqueued.
 */
export const enqueue: Command = {
  summary: "Enqueue one task, or many from a JSONL file or stdin",
  usage,
  options: {
    file: {
      type: "string",
      short: "f",
      value: "F.jsonl",
      description: 'one task per line, as the API takes it: {"payload": …, "priority": …} ("-": stdin)',
    },
    type: { type: "string", value: "T", description: "the tasks' type", default: '"default"' },
    priority: {
      type: "string",
      value: "N",
      description: `higher runs first, -${MAX_PRIORITY} to ${MAX_PRIORITY}`,
      default: "0",
    },
    delay: { type: "string", value: "S", description: "due after this long (90, 15m, 2h)", default: "now" },
    "run-at": { type: "string", value: "ISO", description: "due at this time (ISO 8601 with a zone)" },
    "expires-in": {
      type: "string",
      value: "S",
      description: "start deadline from now: not started by then, the task ends expired (90, 15m, 2h)",
    },
    "start-by": { type: "string", value: "ISO", description: "start deadline as a time (ISO 8601 with a zone)" },
    "dedupe-key": { type: "string", value: "K", description: "skip the task while a live task holds this key" },
    "idempotency-key": {
      type: "string",
      value: "K",
      description: "within --window of the key's first task, answer that task instead of making another",
    },
    "debounce-key": {
      type: "string",
      value: "K",
      description: "run --window after the key's latest enqueue, with the latest payload",
    },
    "singleton-key": { type: "string", value: "K", description: "one task of the key at a time" },
    window: { type: "string", value: "S", description: "the idempotency or debounce window (90, 15m, 2h)" },
    "while-running": {
      type: "string",
      value: "P",
      description: "singleton: skip (answer the running task) or replace (queue one behind it)",
      default: "skip",
    },
    group: { type: "string", value: "G", description: "the tasks' group (cancel and redrive by group)" },
    key: { type: "string", value: "K", description: "the tasks' flow-control key (a tenant, an account)" },
    "max-attempts": {
      type: "string",
      value: "N",
      description: `tries before a task is dead, 1 to ${MAX_ATTEMPTS_LIMIT}`,
      default: "the queue's max_attempts",
    },
    after: {
      type: "string",
      multiple: true,
      value: "ID",
      description: "wait until task ID has finished (depends_on, docs/dependencies.md)",
    },
    "on-dependency-failure": {
      type: "string",
      value: "P",
      description: `${DEPENDENCY_FAILURE_POLICIES.join(", ")}: if one it waits for ends dead, cancelled, expired`,
      default: '"fail"',
    },
    json: { type: "boolean", description: "print { queue, created, deduplicated, tasks } as JSON" },
  },
  async run(ctx) {
    const [queueRaw, payloadRaw] = positionals(ctx, enqueue, ["queue"], ["payload-json"]);
    const queue = queueArg(enqueue, queueRaw);
    const file = stringFlag(ctx, "file");
    if (file !== undefined && payloadRaw !== undefined) {
      throw usageError(enqueue, "give <payload-json> or --file, not both");
    }
    const defaults = taskDefaults(ctx);

    let tasks: Array<{ task: NewTask; line: number }>;
    let source: string;
    if (file === undefined) {
      source = "the command line";
      const task = { payload: parsePayload(payloadRaw ?? "{}"), ...defaults };
      const checked = EnqueuedTaskSchema.safeParse(task);
      if (!checked.success) throw usageError(enqueue, describeZodError(checked.error, "task"));
      tasks = [{ task, line: 0 }];
    } else {
      source = file === "-" ? "stdin" : file;
      tasks = await readTasks(file === "-" ? ctx.stdin : file, source, defaults);
    }

    const ids = monotonicFactory();
    const outcomes = await send(ctx, queue, tasks, ids, source);
    const created = outcomes.filter((o) => !o.deduplicated).length;
    const deduplicated = outcomes.length - created;
    if (ctx.flags.json) writeJson(ctx.stdout, { queue, created, deduplicated, tasks: outcomes });
    ctx.stderr.write(
      `enqueued ${plural(outcomes.length, "task")} to ${queue}: ${created} created, ${deduplicated} deduplicated\n`,
    );
  },
};

/** The fields the flags give, for tasks that lack them. */
function taskDefaults(ctx: CommandContext): Partial<NewTask> {
  const delay = durationFlag(ctx, enqueue, "delay");
  const runAt = isoFlag(ctx, enqueue, "run-at");
  if (delay !== undefined && runAt !== undefined) throw usageError(enqueue, "give --delay or --run-at, not both");
  const after = listFlag(ctx, "after");
  const policy = stringFlag(ctx, "on-dependency-failure");
  if (policy !== undefined && after.length === 0) throw usageError(enqueue, "--on-dependency-failure needs --after");
  if (policy !== undefined && !(DEPENDENCY_FAILURE_POLICIES as readonly string[]).includes(policy)) {
    throw usageError(enqueue, `--on-dependency-failure: one of ${DEPENDENCY_FAILURE_POLICIES.join(", ")}`);
  }
  const defaults: Partial<NewTask> = {
    type: stringFlag(ctx, "type"),
    priority: intFlag(ctx, enqueue, "priority", { min: -MAX_PRIORITY, max: MAX_PRIORITY }),
    delay_s: delay,
    run_at: runAt,
    dedupe_key: stringFlag(ctx, "dedupe-key"),
    group: stringFlag(ctx, "group"),
    key: stringFlag(ctx, "key"),
    max_attempts: intFlag(ctx, enqueue, "max-attempts", { min: 1, max: MAX_ATTEMPTS_LIMIT }),
    ...deadlineFlags(ctx),
    ...keyFlags(ctx),
    depends_on: after.length > 0 ? after : undefined,
    on_dependency_failure: policy as NewTask["on_dependency_failure"],
  };
  return Object.fromEntries(Object.entries(defaults).filter(([, v]) => v !== undefined));
}

/** --expires-in or --start-by: the task's start deadline. */
function deadlineFlags(ctx: CommandContext): Partial<NewTask> {
  const expiresIn = durationFlag(ctx, enqueue, "expires-in");
  const startBy = isoFlag(ctx, enqueue, "start-by");
  if (expiresIn !== undefined && startBy !== undefined) {
    throw usageError(enqueue, "give --expires-in or --start-by, not both");
  }
  return { expires_in_s: expiresIn, start_by: startBy };
}

/** --idempotency-key, --debounce-key or --singleton-key, with --window or --while-running. */
function keyFlags(ctx: CommandContext): Partial<NewTask> {
  const idempotency = stringFlag(ctx, "idempotency-key");
  const debounce = stringFlag(ctx, "debounce-key");
  const singleton = stringFlag(ctx, "singleton-key");
  const given = [idempotency, debounce, singleton].filter((k) => k !== undefined);
  if (given.length > 1) throw usageError(enqueue, "give one of --idempotency-key, --debounce-key, --singleton-key");
  const window = durationFlag(ctx, enqueue, "window");
  const whileRunning = stringFlag(ctx, "while-running");
  if ((idempotency !== undefined || debounce !== undefined) && window === undefined) {
    throw usageError(enqueue, `--${idempotency !== undefined ? "idempotency" : "debounce"}-key needs --window`);
  }
  if (window !== undefined && idempotency === undefined && debounce === undefined) {
    throw usageError(enqueue, "--window goes with --idempotency-key or --debounce-key");
  }
  if (whileRunning !== undefined && singleton === undefined) {
    throw usageError(enqueue, "--while-running goes with --singleton-key");
  }
  if (whileRunning !== undefined && whileRunning !== "skip" && whileRunning !== "replace") {
    throw usageError(enqueue, "--while-running: skip or replace");
  }
  if (idempotency !== undefined) return { idempotency: { key: idempotency, window_s: window! } };
  if (debounce !== undefined) return { debounce: { key: debounce, window_s: window! } };
  if (singleton !== undefined) {
    return { singleton: { key: singleton, while_running: (whileRunning ?? "skip") as "skip" | "replace" } };
  }
  return {};
}

/** A task with an idempotency, debounce or singleton key: the key is its idempotence (the API takes no id with
 * it), so no id is made for it here. */
function keyed(task: NewTask): boolean {
  return task.idempotency !== undefined || task.debounce !== undefined || task.singleton !== undefined;
}

function parsePayload(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new CliError(`<payload-json>: ${(error as Error).message}`, EXIT.input);
  }
}

/** Fields of which a line gives one: its own wins over the flags' defaults for all of them. */
const ALTERNATIVES = [
  ["delay_s", "run_at"],
  ["expires_in_s", "start_by"],
  ["idempotency", "debounce", "singleton"],
];

/** A line's task with the flags' defaults for what it lacks; a line's own delay_s or run_at wins over both
 * (and so for a deadline, and a key). */
function withDefaults(task: Record<string, unknown>, defaults: Partial<NewTask>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...task };
  const taken = ALTERNATIVES.filter((names) => names.some((name) => name in task)).flat();
  for (const [key, value] of Object.entries(defaults)) {
    if (key in merged) continue;
    if (taken.includes(key)) continue;
    merged[key] = value;
  }
  return merged;
}

/**
 * Reads and validates every line of a JSONL file or stream before anything is sent. Blank lines are
 * skipped; line numbers count every line, blank or not, as an editor does.
 */
async function readTasks(
  input: string | NodeJS.ReadableStream,
  source: string,
  defaults: Partial<NewTask>,
): Promise<Array<{ task: NewTask; line: number }>> {
  const stream = typeof input === "string" ? createReadStream(input, { encoding: "utf8" }) : input;
  const tasks: Array<{ task: NewTask; line: number }> = [];
  let line = 0;
  try {
    for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
      line += 1;
      const trimmed = text.trim();
      if (trimmed === "") continue;
      let value: unknown;
      try {
        value = JSON.parse(trimmed);
      } catch (error) {
        throw new CliError(`${source}: line ${line}: ${(error as Error).message}`, EXIT.input);
      }
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw new CliError(
          `${source}: line ${line}: expected a task object like {"payload": {...}}, got ${Array.isArray(value) ? "an array" : JSON.stringify(value)}`,
          EXIT.input,
        );
      }
      const task = withDefaults(value as Record<string, unknown>, defaults);
      const checked = EnqueuedTaskSchema.safeParse(task);
      if (!checked.success) {
        const hint = unwrappedHint(value as Record<string, unknown>);
        throw new CliError(`${source}: line ${line}: ${describeZodError(checked.error, "task")}${hint}`, EXIT.input);
      }
      tasks.push({ task: task as NewTask, line });
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`${source}: ${(error as Error).message}`, EXIT.input);
  }
  return tasks;
}

/** The fields a line (a task) may have: EnqueuedTaskSchema's. */
const TASK_FIELDS = new Set(Object.keys(EnqueuedTaskSchema.shape));

/**
 * A hint for a line that looks like a bare payload (`{"n": 1}` rather than `{"payload": {"n": 1}}`): one
 * with a field a task does not have and no `payload`. Empty otherwise.
 */
function unwrappedHint(line: Record<string, unknown>): string {
  const keys = Object.keys(line);
  if ("payload" in line || keys.every((key) => TASK_FIELDS.has(key))) return "";
  return ' (each line is a task, its payload inside: {"payload": {...}}; to enqueue this object as the payload, wrap it)';
}

/** Splits tasks into requests of at most CHUNK_TASKS tasks and CHUNK_BYTES of JSON. */
function chunk<T extends { task: NewTask }>(tasks: T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of tasks) {
    const size = Buffer.byteLength(JSON.stringify(item.task)) + 1;
    if (current.length > 0 && (current.length === CHUNK_TASKS || bytes + size > CHUNK_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Posts one chunk, retrying 429s, 5xx and dropped connections (safe: every task carries its id). */
async function post(client: Client, queue: string, tasks: NewTask[], connected: boolean): Promise<Outcome[]> {
  for (let attempt = 1; ; attempt++) {
    const backoff = 500 * 2 ** (attempt - 1);
    try {
      const res = await client.v1.queues[":queue"].tasks.$post({ param: { queue }, json: { tasks } });
      const status: number = res.status; // typed as the success status only
      if ((status === 429 || status >= 500) && attempt < MAX_TRIES) {
        await sleep(backoff);
        continue;
      }
      return (await expectOk(res)).tasks;
    } catch (error) {
      // A server that never answered is reported at once; one that went away mid-file gets retries.
      const dropped = error instanceof CliError && error.exitCode === EXIT.unreachable && connected;
      if (!dropped || attempt >= MAX_TRIES) throw error;
      await sleep(backoff);
    }
  }
}

/** Sends the tasks chunk by chunk, printing ids as each chunk is accepted. */
async function send(
  ctx: CommandContext,
  queue: string,
  tasks: Array<{ task: NewTask; line: number }>,
  nextId: () => string,
  source: string,
): Promise<Outcome[]> {
  const ours = new Set<string>();
  for (const { task } of tasks) {
    if (task.id === undefined && !keyed(task)) {
      task.id = nextId();
      ours.add(task.id);
    }
  }
  const chunks = chunk(tasks);
  const progress = tasks.length > 1 ? new ProgressBar(ctx.stderr, tasks.length, `enqueue ${queue}`) : undefined;
  const outcomes: Outcome[] = [];
  let sending: typeof tasks = [];
  try {
    for (const part of chunks) {
      sending = part;
      const results = await post(
        ctx.client,
        queue,
        part.map((p) => p.task),
        outcomes.length > 0,
      );
      // A task deduplicated against the id made for it here was created by an earlier attempt of this chunk.
      const fixed = results.map((r, i) =>
        r.deduplicated && r.id === part[i]?.task.id && ours.has(r.id) ? { ...r, deduplicated: false } : r,
      );
      outcomes.push(...fixed);
      if (!ctx.flags.json) ctx.stdout.write(fixed.map((r) => r.id).join("\n") + "\n");
      progress?.tick(part.length);
    }
  } catch (caught) {
    progress?.done();
    const error = caught instanceof CliError ? withLine(caught, sending, source) : caught;
    if (!(error instanceof CliError) || outcomes.length === 0) throw error;
    const last = tasks[outcomes.length - 1]?.line;
    if (ctx.flags.json) writeJson(ctx.stdout, { queue, partial: true, tasks: outcomes });
    throw new CliError(
      `${error.message} (${outcomes.length} of ${tasks.length} tasks were enqueued, through ${source} line ${last}; ` +
        `the rest were not)`,
      error.exitCode,
      error.code,
    );
  }
  progress?.done();
  return outcomes;
}

/**
 * An API refusal naming a task of the request (`tasks[2].id: …`, counted within the request), with the
 * line of the input that task came from: `… (tasks.jsonl line 1502)`.
 */
function withLine(error: CliError, request: Array<{ line: number }>, source: string): CliError {
  const index = /\btasks\[(\d+)\]/.exec(error.message)?.[1];
  const line = index === undefined ? undefined : request[Number(index)]?.line;
  if (line === undefined || line === 0) return error;
  return new CliError(`${error.message} (${source} line ${line})`, error.exitCode, error.code);
}
