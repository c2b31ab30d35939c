import { describe, expect, it } from "vitest";
import { HandOuts } from "../../src/coordinator/hand-outs";
import { CLAIM_WINDOW_S, CONTESTED_CHECK_MS, CONTESTED_CLAIM_S } from "../../src/contracts/limits";

/** The hand-out ledger alone, on times the test chooses (the coordinator's use of it — ending claim windows
 * statement, the alarm, the polls served — is covered by hung-up-polls.test.ts and provisional.test.ts). */
const CONTESTED_MS = CONTESTED_CLAIM_S * 1000;
const row = (id: string) => ({ id, leaseToken: `tok-${id}` });
const ids = (handOuts: Array<{ item: { id: string } } | { id: string }>) =>
  handOuts.map((h) => ("item" in h ? h.item.id : h.id));

describe("HandOuts", () => {
  it("takes back a hand-out once it has gone unclaimed for CONTESTED_CLAIM_S, not before", () => {
    const handOuts = new HandOuts();
    handOuts.record(1_000, "w1", [row("a")], true);
    expect(handOuts.nextContestedAt(1_000)).toBe(1_000 + CONTESTED_MS);
    expect(handOuts.takeContested(1_000 + CONTESTED_MS - 1)).toEqual([]);
    expect(ids(handOuts.takeContested(1_000 + CONTESTED_MS))).toEqual(["a"]);
    expect(handOuts.nextContestedAt(1_000 + CONTESTED_MS)).toBeNull();
  });

  it("batches claim-window ends: at most one per CONTESTED_CHECK_MS, each taking every hand-out contested by then", () => {
    const handOuts = new HandOuts();
    // A busy queue: a hand-out every 25 ms.
    for (let i = 0; i < 40; i++) handOuts.record(i * 25, `w${i}`, [row(`t${i}`)], true);
    const first = handOuts.takeContested(CONTESTED_MS);
    expect(ids(first)).toEqual(["t0"]);
    // The next hand-outs turn contested 25 ms apart, but none is taken until CONTESTED_CHECK_MS has passed...
    for (let t = CONTESTED_MS + 25; t < CONTESTED_MS + CONTESTED_CHECK_MS; t += 25) {
      expect(handOuts.takeContested(t)).toEqual([]);
    }
    expect(handOuts.nextContestedAt(CONTESTED_MS + 25)).toBe(CONTESTED_MS + CONTESTED_CHECK_MS);
    // ...and then all of them at once.
    const second = handOuts.takeContested(CONTESTED_MS + CONTESTED_CHECK_MS);
    expect(ids(second)).toEqual(Array.from({ length: CONTESTED_CHECK_MS / 25 }, (_, i) => `t${i + 1}`));
  });

  it("a check that found nothing contested does not delay the next one", () => {
    const handOuts = new HandOuts();
    handOuts.record(1_000, "w1", [row("a")], true);
    expect(handOuts.takeContested(1_500)).toEqual([]);
    expect(ids(handOuts.takeContested(1_000 + CONTESTED_MS))).toEqual(["a"]);
  });

  it("takes a withdrawn wait's hand-outs at once, whatever the batching, and forgets what outlived the claim window", () => {
    const handOuts = new HandOuts();
    handOuts.record(0, "w1", [row("a")], true);
    handOuts.record(0, "w2", [row("b")], true);
    handOuts.record(100, "w3", [row("c")], true);
    expect(ids(handOuts.takeContested(CONTESTED_MS))).toEqual(["a", "b"]);
    handOuts.record(CONTESTED_MS, "w4", [row("d")], true);
    expect(ids(handOuts.takeFor("w4", CONTESTED_MS + 1))).toEqual(["d"]);
    expect(handOuts.takeContested(CLAIM_WINDOW_S * 1000 + 100)).toEqual([]);
    expect(handOuts.nextContestedAt(CLAIM_WINDOW_S * 1000 + 100)).toBeNull();
  });

  it("never contests a hand-out to a poll whose hang-up is reported; a withdrawal still takes it", () => {
    const handOuts = new HandOuts();
    handOuts.record(0, "watched", [row("a")], false);
    expect(handOuts.nextContestedAt(CONTESTED_MS)).toBeNull();
    expect(handOuts.takeContested(5 * CONTESTED_MS)).toEqual([]);
    expect(ids(handOuts.takeFor("watched", 5 * CONTESTED_MS))).toEqual(["a"]);
  });

  it("restores what endClaimWindows did not look at, in hand-out order, due at once at the next check", () => {
    const handOuts = new HandOuts();
    handOuts.record(0, "w1", [row("a")], true);
    handOuts.record(10, "w2", [row("b"), row("c")], true);
    handOuts.record(20, "w3", [row("d")], true);
    const contested = handOuts.takeContested(CONTESTED_MS + 20);
    expect(ids(contested)).toEqual(["a", "b", "c", "d"]);
    handOuts.restore(contested.slice(2));
    expect(handOuts.nextContestedAt(CONTESTED_MS + 20)).toBe(CONTESTED_MS + 20 + CONTESTED_CHECK_MS);
    expect(ids(handOuts.takeContested(CONTESTED_MS + 20 + CONTESTED_CHECK_MS))).toEqual(["c", "d"]);
  });
});
