import type { Dependencies } from "./store-dependencies";
import type { RemoteDependencies } from "./store-remote-dependencies";
import type { BulkWrites } from "./store-bulk";
import type { CounterReads, TaskReads } from "./store-reads";
import type { Presence, QueueRecords, Transit } from "./store-shards";
import type { Upkeep } from "./store-upkeep";
import type { FlowControl } from "./store-flow";
import type { Deadlines } from "./store-deadlines";
import type { CallerBatches } from "./store-caller-batches";
import type { SqsSettings } from "./store-sqs";
import type { Sessions } from "./store-sessions";
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
    Deadlines,
    CallerBatches,
    SqsSettings,
    Sessions {}

export type {
  TaskWrites,
  HolderAcks,
  HolderWrites,
  HandOutWrites,
  OperatorWrites,
  QueueCancelled,
} from "./store-writes";
export type { TaskReads, CounterReads } from "./store-reads";
export type { QueueRecords, Presence, Transit } from "./store-shards";
export type { Upkeep } from "./store-upkeep";
export type { FlowControl } from "./store-flow";
export type { FlowKeyState, QueueFlowState } from "./flow-control";
export type { FlowFigures, KeyFigures } from "../contracts/flow-figures";
export type { StarvedKey } from "./flow-starved";
export type { Dependencies } from "./store-dependencies";
export type { RemoteDependencies } from "./store-remote-dependencies";
export type { BulkChanged, BulkWrites, TaskFilter } from "./store-bulk";
export type { Deadlines } from "./store-deadlines";
export type { CallerBatches, PreparedStatements } from "./store-caller-batches";
export type { SqsSettings } from "./store-sqs";
export type { Sessions } from "./store-sessions";
export type { StoredQueue, StoredTask } from "../contracts/stored-task";

// The domain types the operations above take and answer, for callers outside src/engine: the port is the one
// module of the engine they import (`port-only` in .dependency-cruiser.cjs).
export type { AckKind, AckOutcome, AckScope, ChildTask, FencedItem, SettledDependent } from "./ack";
export type { CompleteItem } from "./complete";
export type { CounterSums, RecentCounts } from "./counters";
export type { DependencyEntry, DependencyPage, DependentEntry } from "./dependency-reads";
export type { EnqueueOptions, EnqueueOutcome, EnqueueResult, NewTask } from "./enqueue";
export type { ExpiredTask } from "./expire";
export type { ExtendItem } from "./extend";
export type { FailItem } from "./fail";
export type { FanOutResult } from "./fan-out";
export type { HeartbeatRequest } from "./heartbeat";
export type { EndedHandOut } from "./end-claim-windows";
export type { LeasedAnswer, LeaseRequest } from "./lease";
export type { LiveCounts, LiveFigures } from "./live-figures";
export type { FrontOptions, QueueFront, ReapedTask } from "./live-front";
export type { PurgeOptions } from "./purge";
export type { QueueConfig, RateLimit, WhyUnavailable } from "./queue-config";
export type { QueueProcessing } from "../contracts/queue-processing";
export type { ListFilter, QueueStats, StateCounts, TaskEventFields, TaskPage } from "./read";
export type { ReapResult } from "./reap";
export type { RedriveScope } from "./redrive";
export type { OwedSettlement, RemoteDependency } from "./remote-dependencies";
export type { ReturnedTask } from "./return-undelivered";
export type { DeliveredRow, PartitionSelection, TransitDestination, TransitRow, TransitSelection } from "./transit";
export type { UniqueKey } from "./unique-keys";
export type { TaskField } from "../contracts/task-field";
