import * as z from "zod";
import { SESSION_LEASE_S, SessionId } from "./session";
import { component } from "./component";
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_BATCH,
  MAX_DELAY_S,
  MAX_DEPENDENCIES,
  MAX_DEPENDENCY_PAGE,
  MAX_FAN_OUT,
  MAX_START_DEADLINE_S,
  MAX_UNIQUE_WINDOW_S,
  MAX_ENQUEUE_TASKS,
  MAX_VISIBILITY_TIMEOUT_S,
  MAX_WAIT_S,
  MIN_VISIBILITY_TIMEOUT_S,
  MIN_RETENTION_S,
  MAX_PUSH_CONCURRENCY,
  MAX_RUN_S_LIMIT,
  MAX_PARTITIONS,
  MAX_REDRIVE_PER_CALL,
  MAX_HOLDER_CHARS,
  MAX_WAITER_ID_CHARS,
  QUEUE_NAME_PATTERN,
  QUEUE_NAME_RULE,
} from "./limits";
import { FINAL_STATES, REVIVABLE_STATES } from "./states";
import { FlowConfigSchema } from "./flow";
import { DEPENDENCY_FAILURE_POLICIES } from "./dependencies";
import {
  Priority,
  QueueName,
  ShortText,
  STORED_JSON,
  storedJson,
  TaskKey,
  TaskStateSchema as State,
  TaskType,
  Text,
} from "./fields";
import { ChildTaskSpecSchema, checkThen, LeasedTaskSchema, MAX_CHILDREN, TaskSchema } from "./task";

export { ChildTaskSpecSchema, LeasedTaskSchema, QueueName, TaskSchema };

/**
 * Every request and response shape of the HTTP API, defined once: handlers validate with them, the
 * OpenAPI document is generated from them. The task itself and its `then` children are the engine's
 * contract too, so they live in src/contracts/ (the engine takes its types from there) and are
 * re-exported here.
 */

/** ULIDs: 26 Crockford base32 characters. Ids must be ULIDs so purges can walk them in time order. */
export const TaskId = z
  .string()
  .regex(/^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$/, "a ULID (26 Crockford base32 characters)")
  .transform((s) => s.toUpperCase())
  .meta({ example: "01JD3Z8Q9V6Y4T2N1R0M5K7H8G" });

const IsoTime = z.iso.datetime({ offset: true }).meta({ example: "2026-11-21T12:00:00.000Z" });

/** Most characters of a refused path segment quoted back in its 400: a name is at most 64, and a URL may
 * carry kilobytes the message has no use for. */
const QUOTED_SEGMENT_CHARS = 80;

/**
 * The queue a URL path names. A refusal quotes the segment as the Worker received it, so a dot-segment —
 * `..` or `%2e%2e`, which is not a queue name — that reaches the Worker unresolved is a 400 naming it
 * (`queue: ".." is not a queue name …`), never another route (docs/api.md, "Conventions").
 */
const QueuePathName = z.string().regex(QUEUE_NAME_PATTERN, {
  error: (issue) =>
    `${JSON.stringify(String(issue.input).slice(0, QUOTED_SEGMENT_CHARS))} is not a queue name (${QUEUE_NAME_RULE})`,
});

export const QueueParams = z.object({
  queue: QueuePathName.meta({ example: "emails", param: { name: "queue", in: "path" } }),
});
export const TaskParams = z.object({ id: TaskId.meta({ param: { name: "id", in: "path" } }) });

/** A task's start deadline, one of two ways (src/engine/expire.ts). */
const DeadlineFields = {
  start_by: IsoTime.optional().meta({
    description: `start deadline: not started by then, the task ends expired and is never leased; after its run time, at most ${MAX_START_DEADLINE_S} s from now; not with expires_in_s`,
  }),
  expires_in_s: z
    .number()
    .positive()
    .max(MAX_START_DEADLINE_S)
    .optional()
    .meta({ description: "the start deadline in seconds from now (see start_by); not with start_by" }),
};

/** A key's window (s): whole seconds, at least 1, at most MAX_UNIQUE_WINDOW_S (why: src/contracts/limits.ts). */
const WindowS = z.number().int().min(1).max(MAX_UNIQUE_WINDOW_S);
const UniqueKeyText = ShortText(256);

/** Uniqueness over time (src/engine/unique-keys.ts): at most one of the three per task. */
const UniqueFields = {
  idempotency: z.strictObject({ key: UniqueKeyText, window_s: WindowS }).optional().meta({
    description:
      "within window_s of the task that took the key, an enqueue with it makes nothing and is answered with that task (live or finished), deduplicated",
  }),
  debounce: z.strictObject({ key: UniqueKeyText, window_s: WindowS }).optional().meta({
    description:
      "runs window_s after the latest enqueue of the key: until the task starts, an enqueue with the key replaces its payload and moves its run time; not with delay_s or run_at",
  }),
  singleton: z
    .strictObject({ key: UniqueKeyText, while_running: z.enum(["skip", "replace"]).default("skip") })
    .optional()
    .meta({
      description:
        "one task of the key at a time: while one waits, an enqueue is answered with it (replace: replaces its payload); while one runs, skip answers the running one, replace queues one task behind it",
    }),
};

/** The rules of the deadline and key fields that span fields (their ranges against the clock: newTasksOf). */
function checkDeadlineAndKeys(
  t: { [K in keyof typeof DeadlineFields | keyof typeof UniqueFields]?: unknown } & {
    id?: string;
    delay_s?: number;
    run_at?: string;
    start_by?: string;
  },
  ctx: z.RefinementCtx,
): void {
  if (t.start_by !== undefined && t.expires_in_s !== undefined) {
    ctx.addIssue({ code: "custom", message: "give start_by or expires_in_s, not both", path: ["expires_in_s"] });
  }
  if (t.start_by !== undefined && Date.parse(t.start_by) > Date.now() + MAX_START_DEADLINE_S * 1000) {
    ctx.addIssue({
      code: "custom",
      message: `at most ${MAX_START_DEADLINE_S} s (365 days) from now, like expires_in_s`,
      path: ["start_by"],
    });
  }
  const keys = (["idempotency", "debounce", "singleton"] as const).filter((k) => t[k] !== undefined);
  if (keys.length > 0 && t.id !== undefined) {
    ctx.addIssue({
      code: "custom",
      message: "not with an id of your own (the key makes the enqueue idempotent)",
      path: [keys[0]!],
    });
  }
  if (keys.length > 1) {
    ctx.addIssue({
      code: "custom",
      message: `one of idempotency, debounce, singleton (got ${keys.join(", ")})`,
      path: [keys[1]!],
    });
  }
  if (t.debounce !== undefined && (t.delay_s !== undefined || t.run_at !== undefined)) {
    ctx.addIssue({
      code: "custom",
      message: "a debounce sets the run time (window_s after the latest enqueue): not with delay_s or run_at",
      path: ["debounce"],
    });
  }
}

export const NewTaskSchema = z
  .strictObject({
    id: TaskId.optional(),
    type: TaskType.optional(),
    payload: storedJson(z.unknown()).optional().meta({ description: STORED_JSON }),
    priority: Priority.optional().meta({ description: "higher runs first" }),
    delay_s: z.number().min(0).max(MAX_DELAY_S).optional().meta({ description: "seconds from now; not with run_at" }),
    run_at: IsoTime.optional().meta({
      description: `at most ${MAX_DELAY_S} s (365 days) from now; not with delay_s`,
    }),
    max_attempts: z.number().int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
    dedupe_key: ShortText(256).optional(),
    group: ShortText(128).optional(),
    key: TaskKey.optional().meta({
      description: "flow control's key: a tenant, an account (docs/flow-control.md); SQS's MessageGroupId",
    }),
    then: z
      .array(ChildTaskSpecSchema)
      .max(MAX_CHILDREN)
      .optional()
      .meta({ description: "tasks to enqueue atomically when this one completes" }),
    depends_on: z
      .array(TaskId)
      .min(1)
      .max(MAX_DEPENDENCIES)
      .optional()
      .meta({
        description: `ids of existing tasks (any queue on this task's database, any state until pruned) it waits for: it stays waiting until every one has finished, then becomes pending; at most ${MAX_DEPENDENCIES} (docs/dependencies.md)`,
      }),
    on_dependency_failure: z.enum(DEPENDENCY_FAILURE_POLICIES).optional().meta({
      description:
        "when a dependency ends dead, cancelled or expired: fail (default: it ends dead), cancel (it ends cancelled) or continue (it runs once all have finished)",
    }),
    ...DeadlineFields,
    ...UniqueFields,
  })
  .superRefine((t, ctx) => {
    t.then?.forEach((child, i) => {
      if (child.then) checkThen(child.then, ["then", i, "then"], 2, ctx);
    });
  })
  .refine((t) => t.delay_s === undefined || t.run_at === undefined, {
    message: "give delay_s or run_at, not both",
    path: ["run_at"],
  })
  .refine((t) => t.run_at === undefined || Date.parse(t.run_at) <= Date.now() + MAX_DELAY_S * 1000, {
    message: `at most ${MAX_DELAY_S} s (365 days) from now, like delay_s`,
    path: ["run_at"],
  })
  .superRefine(checkDeadlineAndKeys)
  // The rules that span fields, said in the document too (a generated client must not send both).
  .meta({ ...component("NewTask"), not: { required: ["delay_s", "run_at"] } });

/** One task to enqueue, on its own or in a batch; a join (which depends on its fan-out) takes
 * `on_dependency_failure` without `depends_on`, any other task needs them together. */
export const EnqueuedTaskSchema = NewTaskSchema.refine(
  (t) => t.on_dependency_failure === undefined || t.depends_on !== undefined,
  { message: "on_dependency_failure needs depends_on", path: ["on_dependency_failure"] },
);

/** A batch. Its size is documented here but enforced by the engine: over the limit is a 413, not a 400. */
export const EnqueueBatchBody = z.strictObject({
  tasks: z.array(EnqueuedTaskSchema).min(1).meta({ maxItems: MAX_ENQUEUE_TASKS }),
  join: NewTaskSchema.optional().meta({
    ...NewTaskSchema.meta(),
    description: `a task that waits for every one of \`tasks\` (a fan-in), enqueued with them in one atomic call: then at most ${MAX_FAN_OUT} tasks, and neither they nor the join take an id or a dedupe_key; it may name an on_dependency_failure without depends_on (docs/dependencies.md)`,
  }),
});

export const EnqueueBody = z.union([EnqueueBatchBody, EnqueuedTaskSchema]).meta(component("EnqueueBody"));

const EnqueueOutcomeSchema = z.object({ id: z.string(), state: State, deduplicated: z.boolean() });

export const EnqueueResponse = z
  .object({
    tasks: z.array(EnqueueOutcomeSchema),
    join: EnqueueOutcomeSchema.optional().meta({ description: "the join, when the call had one" }),
  })
  .meta(component("EnqueueResponse"));

export const TaskListQuery = z.object({
  state: State.optional(),
  group: ShortText(128).optional(),
  type: ShortText(64).optional(),
  dedupe_key: ShortText(256)
    .optional()
    .meta({ description: "only the tasks with this exact dedupe key (live or finished)" }),
  limit: z.coerce.number().int().min(1).max(MAX_BATCH).default(50),
  cursor: TaskId.optional(),
});

export const TaskListResponse = z.object({ tasks: z.array(TaskSchema), next_cursor: z.string().nullable() });

const LeaseFields = {
  max: z.number().int().min(1).max(MAX_BATCH).default(1),
  visibility_timeout_s: z.number().int().min(MIN_VISIBILITY_TIMEOUT_S).max(MAX_VISIBILITY_TIMEOUT_S).optional(),
  wait_s: z.number().min(0).max(MAX_WAIT_S).default(0),
  holder: ShortText(MAX_HOLDER_CHARS).optional(),
  session: SessionId.optional().meta({
    description: `the worker session (GET /v1/queues/{queue}/session) that keeps these leases: written ${SESSION_LEASE_S} s long (unless visibility_timeout_s says otherwise), lapsed when the session ends`,
  }),
  waiter_id: ShortText(MAX_WAITER_ID_CHARS).optional().meta({
    description:
      "names this long poll so the client can withdraw it (POST /v1/queues/{queue}/lease/withdraw) when it stops; unique per poll, e.g. a UUID",
  }),
};
export const LeaseBody = z.strictObject(LeaseFields);

export const LeaseResponse = z.object({ tasks: z.array(LeasedTaskSchema) });

export const WithdrawBody = z.strictObject({ waiter_id: ShortText(MAX_WAITER_ID_CHARS) });

export const WithdrawResponse = z.object({
  withdrawn: z
    .boolean()
    .meta({ description: "whether the poll was found (waiting, or answered moments ago); false changes nothing" }),
});

const LeaseToken = Text().min(1).max(64);

export const CompleteBody = z.strictObject({
  lease_token: LeaseToken,
  result: storedJson(z.unknown()).optional().meta({ description: STORED_JSON }),
});

export const ReleaseBody = z.strictObject({ lease_token: LeaseToken });

const FailFields = {
  lease_token: LeaseToken,
  error: Text().min(1).max(100_000).meta({ description: "what went wrong (truncated to 2,000 chars)" }),
  retryable: z.boolean().default(true),
  retry_after_s: z.number().min(0).max(MAX_DELAY_S).optional(),
};
export const FailBody = z.strictObject(FailFields);

export const HeartbeatBody = z.strictObject({
  lease_token: LeaseToken,
  extend_s: z
    .number()
    .int()
    .min(MIN_VISIBILITY_TIMEOUT_S)
    .max(MAX_VISIBILITY_TIMEOUT_S)
    .optional()
    .meta({ description: "new lease length from now; default: the lease's own, as it was leased" }),
  progress: z.number().int().min(0).max(100).optional(),
  message: Text().max(1000).optional(),
  checkpoint: storedJson(z.unknown())
    .optional()
    .meta({ description: `what a retry of this task receives back: ${STORED_JSON}` }),
});

export const AckBody = z
  .strictObject({
    // Each result is checked with its own item (by the engine), so a bad one fails only that item.
    complete: z
      .array(
        z.strictObject({
          id: TaskId,
          lease_token: LeaseToken,
          result: z
            .unknown()
            .optional()
            .meta({ description: `${STORED_JSON}; checked per item` }),
        }),
      )
      .default([]),
    fail: z.array(z.strictObject({ id: TaskId, ...FailFields })).default([]),
    release: z.array(z.strictObject({ id: TaskId, ...ReleaseBody.shape })).default([]),
    lease: z
      .strictObject(LeaseFields)
      .optional()
      .meta({
        description:
          "lease the next tasks in the same request, after the acks are applied (as POST /lease with this body): " +
          "a worker's ack and its next lease in one round trip",
      }),
  })
  .refine((b) => b.complete.length + b.fail.length + b.release.length >= 1, {
    message: "give at least one item",
    path: ["complete"],
  })
  .refine((b) => b.complete.length + b.fail.length + b.release.length <= MAX_BATCH, {
    message: `at most ${MAX_BATCH} items per ack`,
    path: ["complete"],
  })
  .meta({
    description: `at least one item and at most ${MAX_BATCH} in all (complete, fail and release together)`,
    anyOf: (["complete", "fail", "release"] as const).map((list) => ({
      required: [list],
      properties: { [list]: { minItems: 1 } },
    })),
  });

export const ErrorSchema = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .meta(component("Error"));

export const AckResponse = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      ok: z.boolean(),
      state: State.optional(),
      children: z.array(z.string()).optional(),
      repeated: z.boolean().optional().meta({ description: "the same ack with the same token was applied before" }),
      error: ErrorSchema.shape.error.optional(),
    }),
  ),
  tasks: z
    .array(LeasedTaskSchema)
    .optional()
    .meta({ description: "present when the body had `lease`: the tasks leased after the acks" }),
});

/** Extends (and claims) up to MAX_BATCH leases at once — a worker claims a long poll's batch with it. */
export const ExtendBody = z.strictObject({
  leases: z
    .array(
      z.strictObject({
        id: TaskId,
        lease_token: LeaseToken,
        visibility_timeout_s: z
          .number()
          .int()
          .min(MIN_VISIBILITY_TIMEOUT_S)
          .max(MAX_VISIBILITY_TIMEOUT_S)
          .optional()
          .meta({ description: "new lease length from now; default: the body's, else the lease's own" }),
      }),
    )
    .min(1)
    .max(MAX_BATCH),
  visibility_timeout_s: z
    .number()
    .int()
    .min(MIN_VISIBILITY_TIMEOUT_S)
    .max(MAX_VISIBILITY_TIMEOUT_S)
    .optional()
    .meta({ description: "every item's default; absent: each lease's own length, as it was leased" }),
});

export const ExtendResponse = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      ok: z.boolean(),
      lease_expires_at: z.string().optional(),
      error: ErrorSchema.shape.error.optional(),
    }),
  ),
});

export const OutcomeResponse = z.object({
  id: z.string(),
  state: State,
  run_at: z.string().nullable(),
  children: z.array(z.string()).meta({ description: "ids of the tasks its `then` enqueued" }),
  repeated: z.boolean().meta({
    description:
      "true when this very ack (same operation, same lease token) had already been applied and its answer was lost: nothing changed now, `state` is the task's state today, `children` is empty",
  }),
});

/** Pause or resume a queue, or one key of it (flow control, docs/flow-control.md). */
export const PauseBody = z
  .strictObject({
    paused: z.boolean().meta({ description: "true pauses, false resumes" }),
    key: TaskKey.optional().meta({ description: "one key of the queue; omitted: the whole queue" }),
  })
  .meta(component("PauseBody"));
export const PauseResponse = z.object({ queue: z.string(), key: z.string().nullable(), paused: z.boolean() });

/** Bulk cancel must say what it cancels: one group, or `all: true` — an empty body cancels nothing. */
export const CancelQueueBody = z
  .strictObject({ group: ShortText(128).optional(), all: z.literal(true).optional() })
  .refine((b) => (b.group === undefined) !== (b.all === undefined), {
    message: 'give either "group" or "all": true',
    path: ["group"],
  })
  .meta({ oneOf: [{ required: ["group"] }, { required: ["all"] }] });

export const RedriveBody = z.strictObject({
  state: z.enum(REVIVABLE_STATES).default("dead"),
  group: ShortText(128).optional(),
  limit: z.number().int().min(1).max(MAX_REDRIVE_PER_CALL).optional(),
});

export const PurgeBody = z
  .strictObject({
    before: IsoTime.optional(),
    older_than_s: z.number().min(0).optional(),
    states: z.array(z.enum(FINAL_STATES)).min(1).optional(),
  })
  // A purge must name its cutoff: an empty body deletes nothing rather than everything finished.
  .refine((b) => (b.before === undefined) !== (b.older_than_s === undefined), {
    message: "give exactly one of before or older_than_s",
    path: ["before"],
  })
  .meta({ oneOf: [{ required: ["before"] }, { required: ["older_than_s"] }] });

export const StateCounts = z.record(State, z.number().int());

/** A key of a queue as its stats show it (flow control, docs/flow-control.md). */
export const FlowKeyStats = z
  .object({
    key: z.string(),
    due: z.number().int().meta({ description: "pending tasks due now" }),
    running: z.number().int().meta({ description: "tasks processing under a live lease" }),
    paused: z.boolean(),
    concurrency: z.number().int().nullable().meta({ description: "the key's concurrency limit; null: none" }),
    at_limit: z.boolean().meta({ description: "running at its concurrency limit (ordered: one running)" }),
    tokens: z.number().int().nullable().meta({ description: "whole tokens of its rate now; null: no rate" }),
  })
  .meta(component("FlowKeyStats"));

export const QueueStatsResponse = z.object({
  queue: z.string(),
  counts: StateCounts,
  due: z.number().int(),
  oldest_due_at: z.string().nullable(),
  flow: z
    .object({
      paused: z.boolean().meta({ description: "the whole queue is paused" }),
      keys: z.array(FlowKeyStats).meta({ description: "the busiest keys (most due, then running), at most 20" }),
    })
    .meta({ description: "flow control: the queue's pause and its busiest keys" }),
});

export const QueueListResponse = z.object({
  queues: z.array(z.object({ queue: z.string(), counts: StateCounts })),
});

export const QueueConfigSchema = z
  .object({
    max_attempts: z.number().int().min(1).max(MAX_ATTEMPTS_LIMIT),
    visibility_timeout_s: z.number().int().min(MIN_VISIBILITY_TIMEOUT_S).max(MAX_VISIBILITY_TIMEOUT_S),
    backoff_base_s: z.number().int().min(1).max(86_400),
    backoff_cap_s: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400),
    retention_s: z
      .number()
      .int()
      .min(0)
      .max(365 * 86_400)
      .refine((s) => s === 0 || s >= MIN_RETENTION_S, `0 (completed tasks not kept) or at least ${MIN_RETENTION_S}`)
      .meta({
        description:
          "seconds finished tasks are kept; 0: a completed task is deleted by its completion (dead, cancelled and expired ones are kept for the default)",
      }),
    mode: z.enum(["pull", "push"]).meta({ description: "push: the queue's coordinator runs the processor" }),
    processor: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,64}$/)
      .nullable()
      .meta({ description: "push mode: the processor for every task; null runs each task's own type" }),
    concurrency: z.number().int().min(1).max(MAX_PUSH_CONCURRENCY),
    rate_limit: z
      .strictObject({ count: z.number().int().min(1).max(100_000), per: z.enum(["second", "minute"]) })
      .nullable()
      .meta({ description: "push mode: at most count task starts per second or minute; null for none" }),
    max_run_s: z.number().int().min(1).max(MAX_RUN_S_LIMIT).nullable().meta({
      description: "longest a task should run, in seconds (`edgeq worker --exec` kills it past this); null for none",
    }),
    flow: FlowConfigSchema.nullable().meta({
      ...FlowConfigSchema.meta(),
      description:
        "flow control by key: per-key concurrency, rate, FIFO, fair shares (docs/flow-control.md); null for none",
    }),
    partitions: z.number().int().min(1).max(MAX_PARTITIONS).meta({
      description:
        "spread the queue's tasks over this many partitions, each on a shard (can only grow; see docs/scale.md)",
    }),
  })
  .meta(component("QueueConfig"));

/**
 * A config change: any subset of the config. The PUT route's body narrows `processor` to the registered
 * names (src/http/queue-config-body.ts); backoff_cap_s >= backoff_base_s, and a push queue's processor
 * being one the Worker's bindings can run, are checked once merged with the stored config, so the document
 * can only say them in words.
 */
export const QueueConfigPatch = QueueConfigSchema.partial().strict().meta({
  description:
    "any subset of the configuration; once merged with the stored values, backoff_cap_s must be at least backoff_base_s, and in push mode the processor must be one GET /v1/processors reports available (rules JSON Schema cannot state)",
});

/** A task's artifacts (GET /v1/tasks/{id}/artifacts). */
export const ArtifactSchema = z
  .object({ name: z.string(), content_type: z.string(), size: z.number().int() })
  .meta(component("Artifact"));
export const ArtifactListResponse = z.object({ artifacts: z.array(ArtifactSchema) });

/** A ticket for the events WebSocket (POST /v1/events/tickets). */
export const TicketResponse = z.object({
  ticket: z.string().meta({ example: "v1.1795000000000.3q2-7wEzq1Xh8Y2u0VJd3eQm6lJp6m0K1yZk9n3WcR0" }),
  expires_at: z.string().meta({ example: "2026-11-21T12:01:00.000Z" }),
});

/** Enqueued, completed and failed per minute (GET /v1/queues/{queue}/throughput, the dashboard's charts). */
export const ThroughputResponse = z.object({
  minutes: z.array(z.object({ minute: z.string(), enqueued: z.number(), completed: z.number(), failed: z.number() })),
});

export const DependencyPageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_DEPENDENCY_PAGE).default(MAX_DEPENDENCY_PAGE),
  cursor: TaskId.optional(),
});

export const DependenciesResponse = z
  .object({
    dependencies: z.array(
      z.object({
        id: z.string(),
        queue: z.string().nullable().meta({ description: "null once the dependency was pruned (it had finished)" }),
        type: z.string().nullable(),
        state: State.nullable(),
        result: z.unknown().meta({
          description:
            "its result when it completed with one of at most 16 KiB of JSON; otherwise null (see result_bytes)",
        }),
        result_bytes: z.number().int().nullable().meta({
          description:
            "the stored result's size in bytes of JSON; a result over 16 KiB is read with GET /v1/tasks/{id}",
        }),
      }),
    ),
    next_cursor: z.string().nullable(),
  })
  .meta(component("Dependencies"));

export const DependentsResponse = z
  .object({
    dependents: z.array(
      z.object({
        id: z.string(),
        queue: z.string(),
        type: z.string(),
        state: State,
        outcome: z
          .string()
          .nullable()
          .meta({ description: "what the task's finishing counted as for it; null while unfinished" }),
      }),
    ),
    next_cursor: z.string().nullable(),
  })
  .meta(component("Dependents"));
