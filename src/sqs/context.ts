import type { Db } from "../db/client";
import type { TaskStore } from "../engine/store";
import type { OperationContext } from "../operations/context";
import type { QueueRoute } from "../shards/queue-route";
import type { SqsEnv } from "./credentials";

/** What every SQS operation runs with: one request's view of the world. */
export interface SqsContext {
  /** What state changes run with (src/operations/): the same calls, and effects, as the HTTP API's. */
  op: OperationContext;
  /** The home database (listing fans out over every shard: `shards`). */
  db: Db;
  /** Every shard's task store, home first. */
  stores: TaskStore[];
  /** Where a queue lives (src/shards/): its partitions' databases; placed on first use. */
  route(queue: string): Promise<QueueRoute>;
  env: SqsEnv;
  /** The request's clock reading (ms), taken once. */
  now: number;
  /** A fresh clock, for waits (long polls) that outlive `now`. */
  clock: () => number;
  /** scheme://host of the request: queue URLs are built on it. */
  origin: string;
  /** The region the caller signed for (ARNs carry it). */
  region: string;
  /** The access key that signed the request (recorded as the lease holder). */
  accessKeyId: string;
  /** The client's disconnect, when the runtime reports it (long polls withdraw on it). */
  signal: AbortSignal;
}

/** One SQS operation: the parsed JSON input in, the JSON output out. */
export type SqsOperation = (input: unknown, ctx: SqsContext) => Promise<Record<string, unknown>>;
