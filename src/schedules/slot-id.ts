import { encodeTime } from "ulid";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * The id of the task a schedule enqueues for a slot: a ULID whose time is the slot and whose 80 random bits
 * are the first bits of SHA-256(name, slot). The same (schedule, slot) always gives the same id, so a
 * firing that is retried, doubled by the cron tick, or replayed after an eviction enqueues nothing new:
 * enqueue treats an existing id as done. The id is a real ULID (the time prefix is what purges walk, and
 * enqueue validates client ids as ULIDs); slots are never in the future when fired.
 *
 * @example
 * const id = await slotTaskId("nightly-scan", Date.parse("2026-01-01T03:00:00Z"));
 */
export async function slotTaskId(name: string, slot: number): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`edgeq-schedule\u0000${name}\u0000${slot}`)),
  );
  // 16 base32 characters = 80 bits: 5 bits each from the first 10 bytes of the digest.
  let out = "";
  for (let i = 0; i < 16; i++) {
    const bit = i * 5;
    const byte = bit >> 3;
    const word = ((digest[byte]! << 8) | digest[byte + 1]!) >> (11 - (bit & 7));
    out += CROCKFORD[word & 31];
  }
  return encodeTime(slot, 10) + out;
}
