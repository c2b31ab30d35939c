import type { SettledDependent } from "./ack";
import type {
  OwedSettlement,
  RemoteDependency,
  RemoteDependencyState,
  RemoteEdgeSpec,
  Settlement,
} from "./remote-dependencies";

/**
 * Dependencies across stores (src/engine/remote-dependencies.ts): each end keeps its half, and nothing needs
 * a transaction over two stores. The dependency's store keeps an outbox of edges (`recordRemoteEdges`) whose
 * settlement it owes from the very step that finishes the dependency — whichever step that is — until the
 * shard layer delivered it (`owedSettlements`, then `dropSettlements`). The dependent's store counts each
 * delivery once (`settleRemoteWait`): a repeated delivery changes nothing, so a crash between a delivery and
 * its drop is made good by delivering again. A task enqueued with `remoteDependencies` (through
 * `enqueueTasks`) waits for them as for local ones, under the same policies.
 */
export interface RemoteDependencies {
  /** Writes the edges of dependents on other stores for the dependencies here still unfinished, atomically
   * with reading each one's state; a dependency not here is missing from the answer. */
  recordRemoteEdges(edges: RemoteEdgeSpec[], now: number): Promise<Map<string, RemoteDependencyState>>;
  /** Up to `limit` settlements owed (dependency finished, dependent not yet told), oldest finish first;
   * reads those and nothing else. */
  owedSettlements(limit: number): Promise<OwedSettlement[]>;
  /** Takes delivered settlements off the owed list at `now` (kept for the dependency's dependents page until
   * it is pruned); answers how many this call took off (a repeated call: 0). */
  dropSettlements(edges: Array<{ dependency: string; dependent: string }>, now: number): Promise<number>;
  /** Counts a settlement off its dependent here, once: released at zero, or ended by a failure as its policy
   * says (cascading here as a local failure does). Answers the dependent when this call settled it, else
   * null; `not_found` when the dependent is not in this store. */
  settleRemoteWait(settlement: Settlement, now: number): Promise<SettledDependent | null>;
  /** A dependent's dependencies on other stores, each with its outcome once delivered. */
  listRemoteWaits(dependent: string): Promise<RemoteDependency[]>;
}
