import { MAX_ERROR_MESSAGE_CHARS, MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { runChild, type ChildExit } from "./child";
import { tail } from "./tail-buffer";
import type { LeasedTask, Outcome, TaskHandler } from "./types";

/**
 * Exit codes of an `--exec` command (the sysexits.h names):
 * - 0 completes the task: stdout, when it is JSON, is the result; otherwise `{ stdout: <its tail> }`.
 * - 75 (EX_TEMPFAIL) fails it for a retry; stdout may be `{ "retry_after_s": N }` to choose the delay
 *   (otherwise the queue's backoff applies).
 * - 78 (EX_CONFIG) fails it permanently: dead at once, no retry (bad input that will never work).
 * - any other code, or death by a signal, fails it for a retry with the queue's backoff.
 */
export const EXEC_EXIT = { ok: 0, retry: 75, permanent: 78 } as const;

/** stdout kept: the API's largest result (256 KiB of JSON); a longer stdout cannot be a result anyway. */
const STDOUT_LIMIT = MAX_PAYLOAD_BYTES;

/** stderr kept, in bytes: a few times the 2,000 characters of error the API stores, so that after UTF-8
 * decoding there are still 2,000 characters to take the tail from. */
const STDERR_LIMIT = 4 * MAX_ERROR_MESSAGE_CHARS;

/** Characters of stdout kept in `{ stdout }` when it is not JSON: a log tail, not a data channel. */
const STDOUT_TAIL_CHARS = 2_000;

/** Longest payload field passed as an EDGEQ_P_* variable: Linux refuses a single environment string over
 * 128 KiB (MAX_ARG_STRLEN) and all of them together over ~2 MB; the whole payload is on stdin anyway. */
const MAX_ENV_VALUE_CHARS = 32 * 1024;

/**
 * The environment of an `--exec` command: the worker's own, plus
 * EDGEQ_TASK_ID, EDGEQ_TASK_TYPE, EDGEQ_QUEUE, EDGEQ_ATTEMPT (1 on the first run), EDGEQ_GROUP (empty when
 * none) and, for each top-level field of an object payload whose value is a string, number or boolean,
 * EDGEQ_P_<NAME>: the name upper-cased with every character other than A-Z, 0-9 and _ replaced by _
 * (`{ "voice-id": "x" }` gives EDGEQ_P_VOICE_ID=x). Values over 32 KiB (or containing NUL) are left out.
 *
 * @example
 * taskEnv({ id: "01J...", type: "resize", queue: "img", attempts: 1, group: null, payload: { width: 640 } }, {});
 * // { EDGEQ_TASK_ID: "01J...", ..., EDGEQ_P_WIDTH: "640" }
 */
export function taskEnv(
  task: Pick<LeasedTask, "id" | "type" | "queue" | "attempts" | "group" | "payload">,
  base: NodeJS.ProcessEnv,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...base,
    EDGEQ_TASK_ID: task.id,
    EDGEQ_TASK_TYPE: task.type,
    EDGEQ_QUEUE: task.queue,
    EDGEQ_ATTEMPT: String(task.attempts),
    EDGEQ_GROUP: task.group ?? "",
  };
  const payload = task.payload;
  if (payload && typeof payload === "object" && !Array.isArray(payload)) {
    for (const [name, value] of Object.entries(payload)) {
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") continue;
      const text = String(value);
      if (text.length > MAX_ENV_VALUE_CHARS || text.includes("\0")) continue;
      env[`EDGEQ_P_${name.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}`] = text;
    }
  }
  return env;
}

/** Parses stdout as JSON, or undefined when it is not (or was cut). */
function jsonOf(exit: ChildExit): unknown {
  const text = exit.stdout.text().trim();
  if (exit.stdout.truncated || text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The outcome of a finished command, per {@link EXEC_EXIT}. */
export function outcomeOf(exit: ChildExit): Outcome {
  if (exit.spawnError)
    return { kind: "fail", error: `could not run the command: ${exit.spawnError.message}`, retryable: true };
  const parsed = jsonOf(exit);
  if (exit.code === EXEC_EXIT.ok) {
    if (parsed !== undefined) return { kind: "complete", result: parsed };
    return { kind: "complete", result: { stdout: tail(exit.stdout.text(), STDOUT_TAIL_CHARS) } };
  }
  const status = exit.timedOut
    ? "timed out"
    : exit.code === null
      ? `killed by ${exit.signal ?? "a signal"}`
      : `exit ${exit.code}`;
  const stderr = exit.stderr.text().trim();
  const prefix = `${status}: `;
  const error = stderr ? prefix + tail(stderr, MAX_ERROR_MESSAGE_CHARS - prefix.length) : status;
  if (exit.code === EXEC_EXIT.permanent) return { kind: "fail", error, retryable: false };
  const retryAfter = (parsed as { retry_after_s?: unknown } | undefined)?.retry_after_s;
  if (exit.code === EXEC_EXIT.retry && typeof retryAfter === "number" && Number.isFinite(retryAfter)) {
    return { kind: "fail", error, retryable: true, retryAfterS: retryAfter };
  }
  return { kind: "fail", error, retryable: true };
}

/**
 * `--exec "<command>"`: runs the command with `sh -c` per task, the payload as JSON on stdin and the
 * task's details added to `env` (the worker's own; {@link taskEnv}); its exit code decides the outcome
 * ({@link EXEC_EXIT}).
 */
export function execHandler(command: string, env: NodeJS.ProcessEnv = process.env): TaskHandler {
  return {
    describe: `exec ${JSON.stringify(command)}`,
    async run(task, ctx) {
      const exit = await runChild({
        command: "sh",
        args: ["-c", command],
        env: taskEnv(task, env),
        stdin: JSON.stringify(task.payload ?? null),
        signal: ctx.signal,
        stdoutLimit: STDOUT_LIMIT,
        stderrLimit: STDERR_LIMIT,
      });
      return outcomeOf(exit);
    },
  };
}
