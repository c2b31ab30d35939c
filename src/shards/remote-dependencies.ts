import type { Env } from "../env";
import { EdgeqError } from "../contracts/errors";
import { MAX_DEPENDENCIES } from "../contracts/limits";
import type { NewTask, RemoteDependency, TaskField } from "../engine/store";
import type { PartRoute } from "./queue-route";
import { allShards, type Shard } from "./shard-set";

/** Rounds of finding dependencies and writing their edges: a dependency that moved to another shard between
 * the two (a move's relay step) is looked for again; three rounds outlast any relay step by far. */
const MAX_PLACING_ROUNDS = 3;

/**
 * Dependencies on other shards, for an enqueue onto `queue` over several shards: each task's `dependsOn` ids
 * that its own partition's database does not hold are found on the others (one read per shard of the ids
 * still missing), their edges written there (`recordRemoteEdges`: an outbox that owes the settlement from the
 * moment the dependency finishes), and the task told of them (`remoteDependencies`, counted by its insert
 * as their state then says). The edges go first: a dependency that finishes before the dependent is inserted
 * owes its settlement all the same, and the delivery finds the dependent once it is there
 * (src/shards/remote-settlements.ts).
 *
 * Refused with the 400 an unknown dependency gets on one database, before anything is written: an id found
 * on no shard (unknown, pruned). One in transit is `task_moving` (503: retry). A dependency that moves or is
 * pruned between the read and its edge's write is looked for again; should the call fail after an edge was
 * written, the edge's settlement finds no dependent and is dropped after ORPHAN_SETTLEMENT_MS.
 *
 * @example
 * const tasks = await placeRemoteDependencies(env, "joins", input, ids, parts, tasksField, now);
 */
export async function placeRemoteDependencies(
  env: Env,
  queue: string,
  input: NewTask[],
  /** Each task's id where it was made before the insert: every dependent's. */
  ids: ReadonlyArray<string | undefined>,
  parts: PartRoute[],
  field: TaskField,
  now: number,
): Promise<NewTask[]> {
  const asked = input.map((task) => [...new Set(task.dependsOn ?? [])]);
  // Too many: the engine refuses it with its own message, without reads here.
  if (asked.every((deps) => deps.length === 0) || asked.some((deps) => deps.length > MAX_DEPENDENCIES)) return input;
  const shards = allShards(env);
  const remote = input.map(() => new Map<string, RemoteDependency>());
  let pending = asked.map((deps, i) => ({ i, deps, asked: input[i]!.dependsOn ?? [] }));
  for (let round = 0; round < MAX_PLACING_ROUNDS && pending.length > 0; round++) {
    const where = await locate(shards, pending, parts, round === 0 ? field : null);
    const edgesByShard = new Map<string, Array<{ i: number; dependency: string }>>();
    for (const { i, deps } of pending) {
      for (const dependency of deps) {
        const at = where.get(dependency);
        if (at === undefined || at === parts[i]!.shard.name) continue; // on its own database: the engine's
        edgesByShard.set(at, [...(edgesByShard.get(at) ?? []), { i, dependency }]);
      }
    }
    const missed: Array<{ i: number; dependency: string }> = [];
    for (const [name, edges] of edgesByShard) {
      const shard = shards.find((s) => s.name === name)!;
      const states = await shard.store.recordRemoteEdges(
        edges.map((e) => ({ dependency: e.dependency, dependent: ids[e.i]!, dependentQueue: queue })),
        now,
      );
      for (const e of edges) {
        const state = states.get(e.dependency);
        if (!state) missed.push(e);
        else remote[e.i]!.set(e.dependency, { id: e.dependency, outcome: state.finished ? state.state : null });
      }
    }
    const again = new Map<number, string[]>();
    for (const e of missed) again.set(e.i, [...(again.get(e.i) ?? []), e.dependency]);
    pending = [...again].map(([i, deps]) => ({ i, deps, asked: input[i]!.dependsOn ?? [] }));
  }
  if (pending.length > 0) {
    const { i, deps, asked: named } = pending[0]!;
    throw unknownDependency(field, i, named.indexOf(deps[0]!), deps[0]!);
  }
  return input.map((task, i) =>
    remote[i]!.size === 0 ? task : { ...task, remoteDependencies: [...remote[i]!.values()] },
  );
}

/**
 * Where each id lives: its task's own partition's database first (most dependencies are there), then the
 * other shards for the ids still missing, one read each. With `field` (the first round), an id found nowhere
 * is refused naming its field; one in transit only is `task_moving`.
 */
async function locate(
  shards: Shard[],
  pending: Array<{ i: number; deps: string[]; asked: string[] }>,
  parts: PartRoute[],
  field: TaskField | null,
): Promise<Map<string, string>> {
  const where = new Map<string, string>();
  const byOwnShard = new Map<string, Set<string>>();
  for (const { i, deps } of pending) {
    const own = parts[i]!.shard.name;
    byOwnShard.set(own, new Set([...(byOwnShard.get(own) ?? []), ...deps]));
  }
  await Promise.all(
    [...byOwnShard].map(async ([name, ids]) => {
      const shard = shards.find((s) => s.name === name)!;
      for (const id of await shard.store.findTaskIdsHeld([...ids])) where.set(id, name);
    }),
  );
  const missing = [...new Set(pending.flatMap((p) => p.deps))].filter((id) => !where.has(id));
  if (missing.length > 0) {
    const found = await Promise.all(
      shards.map(async (s) => ({
        s,
        held: await s.store.findTaskIdsHeld(missing),
        moving: await s.store.findInTransit(missing),
      })),
    );
    for (const { s, held, moving } of found) {
      const settled = new Set(moving);
      for (const id of held) if (!settled.has(id)) where.set(id, s.name);
    }
    const inTransit = new Set(found.flatMap((f) => f.moving));
    for (const id of missing) {
      if (where.has(id)) continue;
      if (inTransit.has(id)) {
        throw new EdgeqError("task_moving", `task ${id} is moving between shards; retry in a second`);
      }
      if (field) {
        const p = pending.find((q) => q.deps.includes(id))!;
        throw unknownDependency(field, p.i, p.asked.indexOf(id), id);
      }
    }
  }
  return where;
}

function unknownDependency(field: TaskField, i: number, k: number, id: string): EdgeqError {
  return new EdgeqError(
    "invalid_request",
    `${field(i, `depends_on[${k}]`)}: no task ${id} to depend on (unknown, pruned, or made by this call)`,
  );
}
