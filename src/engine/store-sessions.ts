import type { FencedItem } from "./ack";

/**
 * What a worker session's coordinator asks of a task store (src/coordinator/sessions.ts): the leases a
 * session holds, so that it can lapse them when the session ends.
 */
export interface Sessions {
  /**
   * The leases held under worker session `session` on `queue` (a lease sent with `session`: its holder ends
   * with the session's mark, src/contracts/session.ts), processing and not expired at `now`. Read-only.
   * Reads the front of each of the queue's lease-order runs only (SESSION_LEASE_WINDOW entries of each),
   * where tasks in flight lie: a session lease behind more than that lapses by its own expiry instead.
   */
  sessionLeases(queue: string, session: string, now: number): Promise<FencedItem[]>;
}
