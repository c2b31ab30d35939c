import type { z } from "zod";
import type { TaskSchema } from "../../contracts/task";
import type { TaskState } from "../../contracts/states";
import type { countsEventSchema, streamMessageSchema } from "../../contracts/events";
import type { HealthListResponse } from "../../health/health-schemas";
import type {
  ArtifactListResponse,
  DependenciesResponse,
  DependentsResponse,
  ErrorSchema,
  QueueConfigSchema,
  QueueListResponse,
  QueueStatsResponse,
  TaskListResponse,
  ThroughputResponse,
  TicketResponse,
} from "../../contracts/api";
import type { BulkResponse } from "../../contracts/bulk";

/**
 * What the API answers, as types derived from the zod schemas the Worker validates and documents them
 * with (type-only imports: nothing of the Worker reaches the browser bundle). A schema change breaks the
 * dashboard's type check instead of the page.
 */
export type ApiError = z.output<typeof ErrorSchema>;
export type QueueList = z.output<typeof QueueListResponse>;
export type QueueStats = z.output<typeof QueueStatsResponse>;
export type QueueConfig = z.output<typeof QueueConfigSchema>;
export type HealthList = z.output<typeof HealthListResponse>;
export type QueueHealth = HealthList["queues"][number];
export type Task = z.output<typeof TaskSchema>;
export type TaskList = z.output<typeof TaskListResponse>;
export type DependencyList = z.output<typeof DependenciesResponse>;
export type DependentList = z.output<typeof DependentsResponse>;
export type BulkAnswer = z.output<typeof BulkResponse>;
export type ArtifactList = z.output<typeof ArtifactListResponse>;
export type Artifact = ArtifactList["artifacts"][number];
export type Throughput = z.output<typeof ThroughputResponse>;
export type ThroughputMinute = Throughput["minutes"][number];
export type Ticket = z.output<typeof TicketResponse>;
export type StreamMessage = z.output<typeof streamMessageSchema>;
export type CountsEvent = z.output<typeof countsEventSchema>;
export type Counts = Partial<Record<TaskState, number>>;
export type { TaskState };
