import type { Dependencies } from "./store-dependencies";
import type { RemoteDependencies } from "./store-remote-dependencies";
import type { BulkWrites } from "./store-bulk";
import type { CounterReads, TaskReads } from "./store-reads";
import type { Presence, QueueRecords, Transit } from "./store-shards";
import type { Upkeep } from "./store-upkeep";
import type { FlowControl } from "./store-flow";
import type { Deadlines } from "./store-deadlines";
import type { HandOutWrites, HolderWrites, OperatorWrites, TaskWrites } from "./store-writes";

/**
 * The task store: the one port through which the rest of edgeq keeps tasks — every state change, read and
 * upkeep step, as operations on domain types (a StoredTask, an AckOutcome, an EnqueueResult, a QueueFront),
 * never a storage row or statement. One store is one database; the shard layer hands out one per database
 * (`Shard.store`, src/shards/shard-set.ts).
 *
 * Only src/engine implements it: `d1TaskStore` (src/engine/d1-store.ts) is today's store, one row per task
 * in D1. A store of another layout (packed tasks, docs/design/packs.md) is another implementation of this
 * interface, and is done when test/engine's conformance suite (test/engine/conformance/) passes on it —
 * fencing, leasability, repeated acks, redelivery, dedupe, counters and its own cost in rows.
 *
 * The rules every implementation keeps, stated on each operation: each state change is atomic (one statement
 * or one transaction of the store); every write by a lease's holder is fenced by its token, state and
 * expiry; time is the caller's `now`, never read inside; every state change adds what it changed to the
 * per-minute counters; errors are the EdgeqErrors of src/contracts/errors.ts.
 *
 * Grouped by who asks. A new capability (flow control by key, dependencies) adds operations to a group, or a
 * group of its own beside these, and its properties to the conformance suite.
 */
export interface TaskStore
  extends
    TaskWrites,
    HolderWrites,
    HandOutWrites,
    OperatorWrites,
    BulkWrites,
    TaskReads,
    CounterReads,
    QueueRecords,
    Presence,
    Transit,
    Upkeep,
    FlowControl,
    Dependencies,
    RemoteDependencies,
    Deadlines {}

export type { TaskWrites, HolderWrites, HandOutWrites, OperatorWrites, QueueCancelled } from "./store-writes";
export type { TaskReads, CounterReads } from "./store-reads";
export type { QueueRecords, Presence, Transit } from "./store-shards";
export type { Upkeep } from "./store-upkeep";
export type { FlowControl } from "./store-flow";
export type { FlowKeyState, QueueFlowState } from "./flow-control";
export type { Dependencies } from "./store-dependencies";
export type { RemoteDependencies } from "./store-remote-dependencies";
export type { BulkChanged, BulkWrites, TaskFilter } from "./store-bulk";
export type { Deadlines } from "./store-deadlines";
export type { StoredQueue, StoredTask } from "../contracts/stored-task";
