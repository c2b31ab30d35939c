import { FINAL_STATES } from "../contracts/states";
import type { Env } from "../env";
import type { Change } from "./changes";
import { QuietHubs } from "./quiet-hubs";
import { coordinatorOf } from "./wake";
import { TASK_WAIT_COLD_QUIET_MS } from "../contracts/limits";

/** Whether a state (or an event's kind) is final: completed, dead, cancelled (and any final state added to
 * FINAL_STATES, e.g. expired, with no change here). */
function isFinal(state: string): boolean {
  return (FINAL_STATES as readonly string[]).includes(state);
}

/**
 * The tasks a change finished, per queue: acks that ended a task (completed, dead, or cancelled at its
 * holder's write), cancels, and what the cron tick's reaper ended (its `dead` and `cancelled` events). A
 * repeated ack is included: its first report may have been lost, and a wait answered twice is answered once.
 *
 * @example
 * finishedBy({ kind: "cancelled", queue: "emails", ids: ["01J…"] }); // Map { "emails" => ["01J…"] }
 */
export function finishedBy(change: Change): Map<string, string[]> {
  const finished = new Map<string, string[]>();
  const add = (queue: string, id: string) => {
    const ids = finished.get(queue);
    if (ids) ids.push(id);
    else finished.set(queue, [id]);
  };
  switch (change.kind) {
    case "acked":
      for (const outcome of change.outcomes) if (outcome.ok && isFinal(outcome.state)) add(outcome.queue, outcome.id);
      break;
    case "cancelled":
      for (const id of change.ids) add(change.queue, id);
      break;
    case "swept":
      for (const event of change.events) if (isFinal(event.kind)) add(change.queue, event.id);
      break;
    default:
      break;
  }
  return finished;
}

/** Per isolate and deployment: the queues whose coordinator answered that nobody waits for their tasks, and
 * until when this isolate skips telling it (the answer's own `quietMs`; TASK_WAIT_COLD_QUIET_MS if none). */
const quietByNamespace = new WeakMap<object, QuietHubs>();

function quietOf(env: Env): QuietHubs {
  let quiet = quietByNamespace.get(env.COORDINATOR);
  if (!quiet) {
    quiet = new QuietHubs(TASK_WAIT_COLD_QUIET_MS);
    quietByNamespace.set(env.COORDINATOR, quiet);
  }
  return quiet;
}

/**
 * Tells each queue's coordinator (partition 0's object, which holds the waits for the queue's tasks:
 * src/coordinator/task-waiters.ts) which of its tasks `change` finished, so `GET /v1/tasks/{id}/wait` answers
 * at once — unless it answered lately that nobody waits there: then this isolate skips it for the time the
 * answer gave (50 ms while waits come, 1 s otherwise), and a wait joining meanwhile reads its task once when
 * every skip has run out. So a queue nobody waits on costs at most one request per skip per isolate.
 * Only the effects owner calls it (follow.ts); a failure delays a wait to its timeout, it loses nothing.
 *
 * @example
 * await tellTaskWaiters(env, { kind: "cancelled", queue: "emails", ids: [id] });
 */
export async function tellTaskWaiters(env: Env, change: Change): Promise<void> {
  const finished = finishedBy(change);
  if (finished.size === 0) return;
  const quiet = quietOf(env);
  await Promise.all(
    [...finished].map(([queue, ids]) => quiet.publish(queue, () => coordinatorOf(env, queue).tasksFinished({ ids }))),
  );
}
