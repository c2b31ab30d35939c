import type { z } from "zod";
import type {
  AckBody,
  AckResponse,
  ArtifactSchema,
  CompleteBody,
  DependenciesResponse,
  DependencyPageQuery,
  DependentsResponse,
  EnqueueBody,
  EnqueueResponse,
  ExtendBody,
  ExtendResponse,
  FailBody,
  HeartbeatBody,
  LeaseBody,
  LeasedTaskSchema,
  OutcomeResponse,
  QueueConfigSchema,
  QueueStatsResponse,
  ReleaseBody,
  TaskListQuery,
  TaskListResponse,
  TaskSchema,
} from "../contracts/api";
import type { WaitResponse } from "../contracts/wait";
import type { BulkBody, BulkResponse } from "../contracts/bulk";

/**
 * The client's request and answer types, taken from the zod schemas that validate the wire on the server
 * (src/contracts/api.ts): what you send is the schema's input (defaults optional), what you get back is its
 * output. A schema change there changes these types; nothing here is written twice.
 */

/** One task to enqueue, or `{ tasks: [...] }` for up to 10,000; a task may wait for others (`depends_on`,
 * `on_dependency_failure`), and `{ tasks, join }` enqueues a fan-out with a task that waits for all of it
 * (docs/dependencies.md). */
export type EnqueueInput = z.input<typeof EnqueueBody>;
export type EnqueueAnswer = z.infer<typeof EnqueueResponse>;

/**
 * A lease request. `waiter_id` names a long poll so that {@link EdgeqClient.withdraw} can end it; a server
 * that does not know the field yet refuses it (`invalid_request`), and the worker then stops sending it.
 */
export type LeaseInput = z.input<typeof LeaseBody> & { waiter_id?: string };
/** A task as a lease hands it out, with the `lease_token` its holder presents. */
export type LeasedTask = z.infer<typeof LeasedTaskSchema>;
/** A task as the API shows it. */
export type Task = z.infer<typeof TaskSchema>;

export type AckInput = z.input<typeof AckBody>;
export type AckAnswer = z.infer<typeof AckResponse>;
export type ExtendInput = z.input<typeof ExtendBody>;
export type ExtendAnswer = z.infer<typeof ExtendResponse>;
export type CompleteInput = z.input<typeof CompleteBody>;
export type FailInput = z.input<typeof FailBody>;
export type ReleaseInput = z.input<typeof ReleaseBody>;
/** What a complete, fail or release answers: the task's state now. */
export type Outcome = z.infer<typeof OutcomeResponse>;
export type HeartbeatInput = z.input<typeof HeartbeatBody>;

/** What a heartbeat answers (the route declares this shape inline, src/http/routes/tasks.ts). */
export interface HeartbeatAnswer {
  id: string;
  lease_expires_at: string;
  progress: number | null;
  progress_message: string | null;
}

/** What a withdraw answers: whether the poll was found (waiting, leasing or just answered). */
export interface WithdrawAnswer {
  withdrawn: boolean;
}

/** What a wait answers: the task as it is now, and whether it is finished (false: the wait ran out first). */
export type WaitAnswer = z.infer<typeof WaitResponse>;

/** A bulk action by filter, and what it answers (`count` changed or, on a dry run, matching; `more`). */
export type BulkInput = z.input<typeof BulkBody>;
export type BulkAnswer = z.infer<typeof BulkResponse>;

export type ListQuery = z.input<typeof TaskListQuery>;
export type TaskPage = z.infer<typeof TaskListResponse>;
export type QueueStats = z.infer<typeof QueueStatsResponse>;
export type QueueConfig = z.infer<typeof QueueConfigSchema>;
export type Artifact = z.infer<typeof ArtifactSchema>;
/** A page of a task's dependencies or dependents: `limit` (at most 100) and the `cursor` a page answered. */
export type DependencyPageInput = z.input<typeof DependencyPageQuery>;
/** A page of a task's dependencies, each with its state and its result (inline up to 16 KiB). */
export type DependencyPage = z.infer<typeof DependenciesResponse>;
/** A page of the tasks that depend on a task, each with the outcome its finishing counted as. */
export type DependentPage = z.infer<typeof DependentsResponse>;
