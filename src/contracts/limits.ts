/**
 * Every limit the engine enforces, with the reason for its value.
 */

/** Largest payload or result, in bytes of JSON. D1 allows 2 MB per row; a row also carries the result
 * and the error history, and a lease of 100 tasks returns 100 payloads in one response. 256 KiB is twice
 * Cloudflare Queues' 128 KB message limit and keeps a full lease response under ~26 MB. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

/** Most tasks per enqueue call: what the API promises. A call is inserted in chunks (below). */
export const MAX_ENQUEUE_TASKS = 10_000;

/** Largest JSON array bound to one statement while enqueueing. D1 caps a bound string at 2 MB;
 * 1 MiB leaves headroom for JSON escaping and keeps each statement well under D1's 30 s limit. */
export const MAX_ENQUEUE_CHUNK_BYTES = 1024 * 1024;

/** Most tasks per enqueue statement, and so the most an enqueue keeps atomic (src/engine/enqueue.ts). D1
 * runs one statement at a time, so a chunk is the longest a lease waits behind a bulk enqueue: 1,000 tasks
 * of 1 KiB were 24-77 ms of SQL here (D1's meta.duration; docs/benchmarks.md, section 3b), inside the
 * 150 ms a lease should take at the median under load; with 1 MiB per statement, that is also where 1 KiB
 * payloads fill a chunk. */
export const MAX_ENQUEUE_CHUNK_TASKS = 1_000;

/** Most tasks in one lease or one batch ack — the same 100 as Cloudflare Queues' batch limit, and small
 * enough that one statement returns quickly while other leasers wait on the single D1 writer. */
export const MAX_BATCH = 100;

/** Longest long-poll wait, in seconds. SQS caps long polling at 20 s; clients and proxies commonly drop
 * idle HTTP requests past 30 s. */
export const MAX_WAIT_S = 20;

/** Longest wait for a task's result (`GET /v1/tasks/{id}/wait?timeout_s=`), in seconds, and the default.
 * Why 20 s, as MAX_WAIT_S: clients and proxies commonly drop idle HTTP requests past 30 s, and a caller whose
 * task is not finished repeats the wait (the answer says so); a longer wait would save a request a minute at
 * most, while the coordinator holds each waiter in memory for its whole length. */
export const MAX_TASK_WAIT_S = 20;

/**
 * How long an isolate told "nobody waits for this queue's tasks" skips telling the queue's coordinator about
 * finished tasks (src/effects/task-waiters.ts), while waits for the queue's tasks were seen lately
 * (TASK_WAIT_WARM_MS). Why 50 ms: a wait that joins during a skip is answered at the latest when the skip runs
 * out (the coordinator reads the task once then), and `wait` promises an answer within 100 ms of the state
 * change; a busy queue nobody waits on costs one coordinator request per 50 ms per isolate, not one per ack.
 */
export const TASK_WAIT_QUIET_MS = 50;

/** The skip for a queue whose coordinator saw no wait for TASK_WAIT_WARM_MS: EVENT_QUIET_MS (1 s), what an
 * event stream nobody listens to costs — a queue nobody waits on pays no more for `wait` existing than that;
 * the first wait after a long quiet may be answered up to this late (later ones within TASK_WAIT_QUIET_MS). */
export const TASK_WAIT_COLD_QUIET_MS = 1_000;

/** How long after its last wait a queue's finished tasks keep the short skip (TASK_WAIT_QUIET_MS). Why 10
 * minutes: a caller that waits does so again within minutes (a Workflow's next step, a request handler's next
 * request); past that the queue goes back to the events' one-second spells. */
export const TASK_WAIT_WARM_MS = 10 * 60_000;

/** What a wait joining during a skip waits beyond its end before reading the task once: an isolate reads its
 * clock after I/O, so its skip may outlast the window by the CPU time it ran since — milliseconds. */
export const TASK_WAIT_QUIET_MARGIN_MS = 20;

/** Visibility timeout bounds, in seconds: at least 1 s; at most 12 h, as SQS and Cloudflare Queues. */
export const MIN_VISIBILITY_TIMEOUT_S = 1;
export const MAX_VISIBILITY_TIMEOUT_S = 12 * 60 * 60;

/** Most attempts a task may be given. Cloudflare Queues allows 100 retries; a bound keeps the error
 * history (one entry per attempt) small. */
export const MAX_ATTEMPTS_LIMIT = 100;

/** Longest delay before a task first runs: 365 days. Anything later is almost surely a unit mistake. */
export const MAX_DELAY_S = 365 * 24 * 60 * 60;

/** Error messages are truncated to this many characters so a stack dump cannot bloat the row. */
export const MAX_ERROR_MESSAGE_CHARS = 2000;

/** Backoff jitter: each retry delay is scaled by a random factor in [1 - JITTER, 1]. 20 % spreads a
 * thundering herd of retries while keeping every delay above the previous uncapped one (0.8 * 2 > 1). */
export const BACKOFF_JITTER = 0.2;

/** Most push tasks one coordinator runs at once. Each in-flight task holds a lease, a heartbeat timer and
 * its processor's memory inside one Durable Object (128 MB); 50 leaves room for audio buffers. */
export const MAX_PUSH_CONCURRENCY = 50;

/** Most partitions a queue may have (src/shards/). Why 32: a lease visits partitions in turn until its batch
 * is full, so a lease on a nearly empty queue costs up to one D1 round trip per partition. */
export const MAX_PARTITIONS = 32;

/** Most rows the cron tick reaps or prunes per statement: bounded work per tick (a Worker invocation has
 * 30 s of CPU and D1 30 s per query); what remains is taken by the next tick a minute later. */
export const MAX_ROWS_PER_TICK_STATEMENT = 5_000;

/** How far into each lease-order run of a queue a session's leases are looked for when the session ends
 * (src/engine/session-leases.ts): tasks in flight lie at the front of the run, where the lease took them; the
 * tick's bound per statement, so the look holds the database a few milliseconds. A session lease behind more
 * than that lapses by its own expiry (SESSION_LEASE_S) instead. */
export const SESSION_LEASE_WINDOW = MAX_ROWS_PER_TICK_STATEMENT;

/** Due pending tasks of one (queue, priority) the cron tick walks past before it stops looking for lapsed
 * leases behind them (src/engine/live-front.ts). Why 1,000: tasks in flight sit ahead of the due pending ones
 * in lease order, and only tasks enqueued with a past run_at or handed back get ahead of them — a thousand of
 * those at once, with no lease taking them, is far beyond what happens; the cost is at most 1,000 index
 * entries read per segment with a backlog, a few milliseconds of D1. */
export const LIVE_FRONT_MIN_PENDING = 1_000;

/** Index entries of each (queue, priority) the tick's first look reads, many segments per D1 round trip.
 * Why 200: most queues' due parts end well within it, so one look settles them; 25 segments of 200 keep a
 * batch under the 5,000 rows of MAX_ROWS_PER_TICK_STATEMENT. */
export const LIVE_FRONT_FIRST_LOOK = 200;

/** Segments per D1 batch in the tick's first look: 25 × LIVE_FRONT_FIRST_LOOK = 5,000 entries at most. */
export const LIVE_FRONT_BATCH = 25;

/** Most index entries one statement of the walk reads after the first look: the same bound as every tick
 * statement (MAX_ROWS_PER_TICK_STATEMENT), a few milliseconds, so requests run between the statements. */
export const LIVE_FRONT_CHUNK = MAX_ROWS_PER_TICK_STATEMENT;

/** Deepest nesting of arrays and objects in a payload, result, checkpoint or `then` payload. SQLite's JSON
 * functions (which D1 runs on every enqueue and ack) fail at ~1,000 levels with "malformed JSON"; 64 is far
 * above any real document (a tts item list is 3 deep) and keeps the recursive check cheap. */
export const MAX_JSON_DEPTH = 64;

/** Longest per-task run-time limit a queue may set (`max_run_s`): 7 days, the longest a worker can hold a
 * task by heart-beating a 12 h visibility timeout without anyone noticing a hung process for too long. */
export const MAX_RUN_S_LIMIT = 7 * 24 * 60 * 60;

/** How long a lease handed to a long poll after it waited stays unclaimed before it is leasable again (the
 * next lease takes it over, attempt refunded; until one does it is still its holder's). The client may have
 * hung up while it waited, and where a disconnect is not seen by the Worker (`wrangler dev`) a live client
 * claims within one round trip (edgeq's worker does so on receipt, and any ack or heartbeat claims). 10 s
 * covers slow links and pauses while bounding what a gone client can delay a task to 10 s instead of a
 * whole visibility timeout. Where the disconnect is seen the poll is withdrawn instead, and its answer is
 * leased plainly, with no claim window (`hangUpReported`, src/coordinator/coordinator.ts). */
export const CLAIM_WINDOW_S = 10;

/** How long a provisional lease stays unclaimed before the coordinator takes it back for another long poll
 * of the queue that waits (only where hang-ups go unseen: a poll whose hang-up is reported is withdrawn
 * instead). Under `wrangler dev` (and any proxy that hides a hang-up) a poll whose client left is answered
 * all the same, and two such polls held a new task 10 s each in turn while a live client waited. A client
 * that claims does so within one round trip of receiving the answer (edgeq's worker on receipt: tens of ms
 * on these 2 busy cores); 1 s is many times that, and keeps what each gone poll can cost a live one to about
 * a second (the goal: a live client gets a new task within 2 s with two hung-up polls parked). Ending a claim window
 * only makes the task leasable, so a slow client keeps it unless the waiting poll actually leases it; with
 * nobody else waiting the full CLAIM_WINDOW_S applies. Why not longer for clients that never claim: there,
 * a gone client and a slow one look the same, and this window is what a gone one costs (docs/api.md). */
export const CONTESTED_CLAIM_S = 1;

/** How often, at most, a coordinator ends the claim windows of contested hand-outs
 * (src/coordinator/hand-outs.ts): each end is a D1 statement and usually finds every lease claimed. Why
 * 250 ms: one statement covers the hand-outs of a quarter second (ten at 40 tasks/s) instead of one per task, and a gone client's task is
 * taken back 1.25 s after its hand-out at the latest — inside the 2 s a live client waits at most with two
 * hung-up polls parked (test/http/hung-up-polls.test.ts; docs/api.md, "Long polls"). */
export const CONTESTED_CHECK_MS = 250;

/** Task priorities run from -MAX_PRIORITY to MAX_PRIORITY (higher runs first). A million levels is more
 * than any scheme of tiers needs, and the bound keeps priorities exact small integers in SQLite and JSON. */
export const MAX_PRIORITY = 1_000_000;

/** Most dead or cancelled tasks one redrive call revives: the call is one UPDATE … RETURNING, and 5,000 rows
 * (as MAX_ROWS_PER_TICK_STATEMENT) keep it well inside D1's 30 s per query; callers loop for more. */
export const MAX_REDRIVE_PER_CALL = 5_000;

/** Most tasks one bulk action (`POST /v1/queues/{queue}/bulk`: cancel, retry, redrive by filter) changes on
 * each database holding the queue per call — and counts, on a dry run. Why 1,000: the action is one UPDATE …
 * RETURNING per database, and D1 runs one statement at a time; 1,000 rows is the size of an enqueue's atomic
 * chunk (MAX_ENQUEUE_CHUNK_TASKS), about what one statement may hold the database for while leases wait. The
 * answer says whether more remain (`more`): a caller repeats until it says none. */
export const MAX_BULK_PER_CALL = 1_000;

/** Most finished tasks one purge call deletes on each database holding the queue: one DELETE … RETURNING
 * per database, and 5,000 rows (as MAX_ROWS_PER_TICK_STATEMENT) hold D1 — which runs one statement at a
 * time — for milliseconds, not the seconds a purge of millions would; callers loop until one purges none. */
export const MAX_PURGE_PER_CALL = 5_000;

/** Longest lease holder name: a host name and a pid, or a pod name, fit; the holder is only a label. */
export const MAX_HOLDER_CHARS = 128;

/** Longest name a client gives its long poll (`waiter_id`, to withdraw it later): a UUID (36 characters)
 * fits with room for a prefix; the coordinator keeps each name in memory while its poll waits. */
export const MAX_WAITER_ID_CHARS = 64;

/** Queue names: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit. They appear in URL
 * paths, Durable Object names and the CLI's pid-file names, so nothing needs escaping anywhere; 64
 * characters is room for a tenant prefix. The API, the CLI and the docs all read this one pattern. */
export const QUEUE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** What QUEUE_NAME_PATTERN allows, in words (error messages and docs). */
export const QUEUE_NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit";

/** The bearer token a development server (`npm start`, no EDGEQ_TOKEN set) accepts, and the CLI's default
 * token when none is configured. Not a secret: outside development the Worker refuses to run without
 * EDGEQ_TOKEN (src/http/auth.ts). */
export const DEV_TOKEN = "edgeq-dev-token";

/** How long per-minute task counters are kept before the cron tick folds them into each queue's totals:
 * 24 h is what a dashboard charts and more than the longest window health reads (failure rate over 15
 * minutes, dead tasks in the last hour); an active (queue, type) keeps at most 1,440 small rows. */
export const COUNTER_MINUTES_KEPT_S = 24 * 60 * 60;

/** Most minutes of counters one tick folds into the totals: an hour per tick catches up a backlog within
 * a day of ticks while keeping each fold (one INSERT … SELECT and one DELETE) small. */
export const MAX_COUNTER_FOLD_MINUTES = 60;

/** SQS-compatible endpoint (src/sqs/): SQS's own published limits, mirrored so SDKs meet the errors they
 * expect. Entries per batch call and messages per ReceiveMessage: 10, as SQS (the SDKs' batch helpers
 * split at 10). */
export const SQS_MAX_BATCH_ENTRIES = 10;

/** Longest per-message and per-queue DelaySeconds: 15 minutes, as SQS (edgeq's own delay_s reaches
 * MAX_DELAY_S; an SQS caller asking for more gets SQS's InvalidParameterValue). */
export const SQS_MAX_DELAY_S = 15 * 60;

/** Largest SQS message, body plus attributes: 256 KiB, SQS's MaximumMessageSize default. The stored
 * payload (`{ body, attributes }` as JSON) must also fit MAX_PAYLOAD_BYTES, which a body full of
 * characters JSON escapes can exceed first; such a message is refused naming both limits. */
export const SQS_MAX_MESSAGE_BYTES = 256 * 1024;

/** Largest SQS request body: ten messages at SQS_MAX_MESSAGE_BYTES plus their JSON framing. Anything larger
 * cannot be a valid SQS call and is refused before its signature is computed (hashing is the costly part). */
export const SQS_MAX_REQUEST_BYTES = SQS_MAX_BATCH_ENTRIES * SQS_MAX_MESSAGE_BYTES + 64 * 1024;

/** How far a SigV4 request's X-Amz-Date may be from the Worker's clock: 15 minutes, AWS's own window
 * (RequestExpired / "Signature expired" past it), so a captured request cannot be replayed later. */
export const SQS_MAX_CLOCK_SKEW_S = 15 * 60;

/** The access key pair a development server accepts when SQS_CREDENTIALS is not set (`npm start`, the
 * tests). Not a secret: in production the SQS endpoint refuses to serve without SQS_CREDENTIALS. */
export const SQS_DEV_ACCESS_KEY_ID = "EDGEQDEVACCESSKEY";
export const SQS_DEV_SECRET_ACCESS_KEY = "edgeq-dev-secret-access-key";

/** Most queue URLs one ListQueues answers: 1,000, as SQS (MaxResults 1-1000; without MaxResults SQS answers
 * at most 1,000 and no NextToken). */
export const SQS_MAX_LIST_RESULTS = 1000;

/** The shortest retention of finished tasks above 0 (queue config `retention_s`): a minute, the cron tick's
 * period — a shorter one would be pruned no sooner. 0 is allowed on its own: a completed task is not kept at
 * all (its completion makes its row a tombstone, out of every client's reach: src/engine/complete-tombstone.ts). */
export const MIN_RETENTION_S = 60;

/** MessageRetentionPeriod bounds, as SQS: 60 s to 14 days. edgeq applies it to finished tasks (retention_s). */
export const SQS_MIN_RETENTION_S = 60;
export const SQS_MAX_RETENTION_S = 14 * 24 * 60 * 60;

/** Most message attributes per message: 10, as SQS (its MD5OfMessageAttributes covers at most ten). */
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;

/** Most tags on one queue: 50, SQS's quota ("Quotas related to queues": no more than 50 tags per queue). A
 * TagQueue that would take a queue past it changes nothing; tags are one JSON column of the queue's config
 * row, so the bound also keeps that row small. */
export const SQS_MAX_TAGS = 50;

/** Longest tag key and value, in Unicode characters: 128 and 256, SQS's quotas for queue tags. */
export const SQS_MAX_TAG_KEY_CHARS = 128;
export const SQS_MAX_TAG_VALUE_CHARS = 256;

/** Largest artifact uploaded through the API: 100 MiB, the request body limit of Workers on most plans. */
export const MAX_ARTIFACT_BYTES = 100 * 1024 * 1024;

/** Task events a queue's coordinator keeps for `?after=SEQ` resumes. A client that reconnects within
 * seconds misses at most a few hundred events even on a busy queue (~1,000 requests/s per object); at
 * ~300 bytes each 1,000 events stay near 300 KB of the object's 128 MB. Older gaps get a "resync". */
export const EVENT_BUFFER_SIZE = 1_000;

/** Event seqs an event hub reserves with one storage write (src/events/event-hub.ts): it stores the
 * highest seq it may hand out, not each seq it hands out, so a publish writes nothing to storage but once
 * per 1,000 events and once per object start (a restarted hub starts past the stored mark, so it never
 * reuses a seq a client saw). Why 1,000: a write per publish call was one Durable Object storage row per
 * enqueue, lease and ack while a client listens ($1.00 per million rows); one per 1,000 events is a
 * thousandth of that, and a restart's jump in seqs stays small enough to read as a restart, not a flood. */
export const EVENT_SEQ_BLOCK = 1_000;

/** Lifetime of an events ticket (POST /v1/events/tickets). It only has to live from the POST to the
 * WebSocket upgrade that follows it; a ticket in a URL may be logged, so a minute makes a leak stale. */
export const EVENT_TICKET_TTL_S = 60;

/** Counts snapshots go out at most once a second per queue (the bound): each one is a D1 read,
 * and a dashboard cannot show more often than that usefully. */
export const EVENT_COUNTS_INTERVAL_MS = 1_000;

/** How long an isolate skips publishing a queue's events after its event hub answered that nobody listens
 * (src/effects/quiet-hubs.ts), and so how long a first listener's upgrade waits before its "hello"
 * (src/events/event-hub.ts: until every isolate's skip has run out, so nothing after "hello" is skipped).
 * Why 1 s: with nobody listening an isolate then sends a queue at most one publish a second instead of
 * one per call (three Durable Object requests per task at batch 1, each on the long poll's critical path
 * under `wrangler dev`: docs/api.md, "Long polls"); a dashboard opening a quiet queue waits about a second for its stream. */
export const EVENT_QUIET_MS = 1_000;

/** What a first listener waits beyond EVENT_QUIET_MS. Why 100 ms: an isolate reads its clock after I/O,
 * so its skip can outlast EVENT_QUIET_MS by the CPU time it ran since — milliseconds, not a tenth of a
 * second. */
export const EVENT_QUIET_MARGIN_MS = 100;

/** Longest alert webhook URL: 2,048 characters, what browsers and most proxies accept in a URL; a longer one
 * is almost surely a pasted mistake. */
export const MAX_ALERT_URL_CHARS = 2048;

/** How long one alert delivery may take before it counts as failed: 10 s is ample for a webhook that only
 * records the alert, and bounds what a hanging endpoint can hold up the cron tick (deliveries run side by
 * side, so a tick waits at most this long for all of them). */
export const ALERT_TIMEOUT_S = 10;

/** Alert delivery backoff: the first retry after 30 s, doubling up to 1 h between tries. The cron tick
 * (once a minute) is what retries, so finer steps would not be kept anyway; an hour keeps a receiver that is
 * down for the night from being called every minute. */
export const ALERT_BACKOFF_BASE_S = 30;
export const ALERT_BACKOFF_CAP_S = 60 * 60;

/** Most delivery attempts of one alert: 12 tries with the backoff above span about 8 hours — a night's
 * outage of the receiver — after which the alert is dropped, its last error kept in the health response. */
export const ALERT_MAX_ATTEMPTS = 12;

/** How late a schedule's slot may fire and still count as on time (not missed): 90 s covers a Durable Object
 * alarm that fired late or was lost to an eviction and re-armed by the next cron tick (one minute), so such
 * slots fire — no gap — whatever `catch_up` says. Slots later than this were missed in downtime, and
 * `catch_up` decides. */
export const SCHEDULE_MISFIRE_GRACE_S = 90;

/** Most missed slots one schedule enqueues when it catches up with `catch_up: "all"` (the latest ones): a
 * schedule firing every 5 seconds, down for a day, would otherwise enqueue 17,280 tasks at once. 100 is one
 * batch. */
export const MAX_CATCH_UP_SLOTS = 100;

/** Shortest and longest `@every` interval: 1 s, the finest cron resolution too; 366 days, beyond which a
 * yearly cron expression says it better. */
export const MIN_EVERY_S = 1;
export const MAX_EVERY_S = 366 * 24 * 60 * 60;

/** Longest cron expression accepted: far above any real one (six fields of lists), short enough to keep a
 * pathological expression from costing the parser much. */
export const MAX_CRON_CHARS = 256;

/** Most schedules one firing pass handles: bounded work per alarm; if more are due, the alarm re-arms at
 * once and the next pass takes them. */
export const MAX_SCHEDULES_PER_FIRE = 100;

/** Most slots a catching-up schedule walks one by one: a day-long gap of an every-second schedule is 86,400
 * steps of croner's arithmetic (tens of ms each at worst); past 10,000 the walk jumps to the recent past. */
export const MAX_SLOT_WALK = 10_000;

/** The latest time (ms) a Durable Object alarm can be set to: workerd holds the alarm as int64 nanoseconds
 * since the epoch and refuses later dates with "This API doesn't support dates after 2189" (the int64 bound
 * itself falls in 2262; the year its message names is kept). A schedule cannot wait for a slot past it. */
export const LATEST_ALARM_AT = Date.UTC(2189, 0, 1);

/** Most dependencies one task may have (`depends_on`). The ids are bound as one JSON array read with
 * `json_each` (D1's 100 bound parameters do not limit them), so the bound is what one enqueue should write:
 * each dependency is one edge row (a billed row) written in the dependent's insert. 10,000 is
 * MAX_ENQUEUE_TASKS, so a join can wait for every task one enqueue call made, and 10,000 ULIDs are 290 KB of
 * JSON: inside MAX_ENQUEUE_CHUNK_BYTES, one statement. */
export const MAX_DEPENDENCIES = 10_000;

/** Most children of a fan-out with its join in one call (`join`: the children, the join and its edges are
 * one D1 batch, all or nothing). One enqueue chunk (MAX_ENQUEUE_CHUNK_TASKS): the longest a lease waits
 * behind an enqueue's statement stays what it is for any enqueue (src/engine/enqueue.ts). A larger fan-in is
 * the children enqueued in calls of their own, then the join with `depends_on` (up to MAX_DEPENDENCIES). */
export const MAX_FAN_OUT = MAX_ENQUEUE_CHUNK_TASKS;

/** Largest result of a dependency shown inline to its dependent (GET /v1/tasks/{id}/dependencies, a push
 * processor's `ctx.dependencies()`), in bytes of JSON; a larger one is given as `result_bytes` only, read with
 * GET /v1/tasks/{id} (a result is at most MAX_PAYLOAD_BYTES). Why 16 KiB: a page of MAX_DEPENDENCY_PAGE
 * results inline is then at most 1.6 MiB, what a lease of 100 small tasks weighs, and a join's summaries
 * (counts, ids, artifact keys) fit well inside it. */
export const MAX_INLINE_DEPENDENCY_RESULT_BYTES = 16 * 1024;

/** Dependencies listed per page (GET /v1/tasks/{id}/dependencies): MAX_BATCH, the size of every other page
 * of tasks the API hands out at once. */
export const MAX_DEPENDENCY_PAGE = 100;
/** Longest idempotency or debounce window, and the farthest a start deadline may lie (s): 7 days. A key row is
 * held for its window, so the window bounds the key table; 7 days is also the default retention of finished
 * tasks (src/engine/queue-config.ts), so the first task is still there to be answered for the whole window
 * (a window past a queue's retention frees its key once the task is pruned). Peers keep keys 10 min (QStash) to
 * 24 h (Inngest) and 30 d at most (Trigger.dev). */
export const MAX_UNIQUE_WINDOW_S = 7 * 24 * 60 * 60;

/** Farthest a task's start deadline may lie from now: as far as its run time may (MAX_DELAY_S, 365 days) —
 * later is almost surely a unit mistake, and the deadline must come after the run time anyway. */
export const MAX_START_DEADLINE_S = MAX_DELAY_S;

/** Rows of `idempotency_keys` one prune window reads, in primary-key order (src/engine/unique-keys.ts): half
 * of MAX_ROWS_PER_TICK_STATEMENT, as the tasks' retention prune reads (a few milliseconds of D1 a tick). */
export const KEY_PRUNE_WINDOW = 2_500;

/** Most folds of the counter events kept in rows one tick runs per database (src/engine/counters-in-row.ts):
 * 30 windows of MAX_FOLD_TASKS (10,000), above the most tasks a database creates a minute (~228,000). */
export const MAX_FOLD_ROUNDS = 30;

/** Most tasks a reader of the counters (metrics, health, stats) reads past the fold's cursor: 300,000, what one
 * tick folds at most (MAX_FOLD_ROUNDS × 10,000). Where the tick runs, that tail is the last 30-90 s of tasks,
 * well inside it. Where the tick has stopped (a Worker deployed without its cron trigger, a tick failing), the
 * tail would grow without end and every /metrics scrape and health check would read all of it. Capped, a
 * reader counts the oldest tasks past the cursor only, so totals still only grow (Prometheus counters must
 * not go down), and the later ones once the tick folds again (src/engine/counters.ts). */
export const MAX_UNFOLDED_TASKS = 300_000;
