import type { Artifact, LeasedTask, TaskContext } from "../../src/node/index";
import type { Outcome } from "../../src/node/types";

export type { LeasedTask, Outcome };
/** An artifact as the API describes it. */
export type ArtifactInfo = Artifact;
/** What a handler may do while it runs a task (the SDK's task context). */
export type HandlerContext = TaskContext;

/**
 * How `edgeq worker` runs one leased task (a shell command, or the tts engine): it returns an
 * {@link Outcome}; a thrown error fails the task (retryable). The SDK's worker owns the lease.
 */
export interface TaskHandler {
  /** Shown in the worker's start line, e.g. `exec "./render.sh"`. */
  describe: string;
  run(task: LeasedTask, ctx: HandlerContext): Promise<Outcome>;
}

/** One line of the worker's stderr log. */
export type Log = (line: string) => void;
