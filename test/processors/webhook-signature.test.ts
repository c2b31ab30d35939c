import { describe, expect, it } from "vitest";
import { signWebhook, verifyWebhook } from "../../src/processors/webhook-signature";

const SECRET = "whsec_example";
const BODY = '{"order":42}';
const T = 1_767_225_600;
/** hex(HMAC-SHA256("whsec_example", '1767225600.{"order":42}')), computed independently (Python's hmac). */
const VECTOR = "9b952ed176ed062ee6d3e3bf2d62af910dad6d0863ed4b52e9bd732e9f4e3ac2";

describe("signWebhook", () => {
  it("produces t=<seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>'>, matching an independent implementation", async () => {
    expect(await signWebhook(SECRET, BODY, T)).toBe(`t=${T},v1=${VECTOR}`);
  });

  it("signs bytes exactly as it signs the same text", async () => {
    expect(await signWebhook(SECRET, new TextEncoder().encode(BODY), T)).toBe(`t=${T},v1=${VECTOR}`);
  });

  it("refuses a timestamp that is not whole seconds (a millisecond clock passed by mistake is caught)", async () => {
    await expect(signWebhook(SECRET, BODY, 1.5)).rejects.toThrow(RangeError);
  });
});

describe("verifyWebhook", () => {
  const header = `t=${T},v1=${VECTOR}`;

  it("accepts a genuine signature within the tolerance, on either side of the receiver's clock", async () => {
    expect(await verifyWebhook(SECRET, BODY, header, T)).toBe(true);
    expect(await verifyWebhook(SECRET, BODY, header, T + 300)).toBe(true);
    expect(await verifyWebhook(SECRET, BODY, header, T - 300)).toBe(true);
    expect(await verifyWebhook(SECRET, BODY, header, T + 3600, 3600)).toBe(true);
  });

  it("rejects a tampered body, a wrong secret and a tampered timestamp", async () => {
    expect(await verifyWebhook(SECRET, '{"order":43}', header, T)).toBe(false);
    expect(await verifyWebhook("another-secret", BODY, header, T)).toBe(false);
    expect(await verifyWebhook(SECRET, BODY, `t=${T + 1},v1=${VECTOR}`, T)).toBe(false);
  });

  it("rejects a replay outside the tolerance (default 300 s)", async () => {
    expect(await verifyWebhook(SECRET, BODY, header, T + 301)).toBe(false);
    expect(await verifyWebhook(SECRET, BODY, header, T - 301)).toBe(false);
    expect(await verifyWebhook(SECRET, BODY, header, T + 61, 60)).toBe(false);
  });

  it("rejects missing or malformed headers without throwing", async () => {
    for (const bad of [
      null,
      undefined,
      "",
      VECTOR,
      `v1=${VECTOR}`,
      `t=${T}`,
      `t=abc,v1=${VECTOR}`,
      `t=${T},v1=${VECTOR.slice(2)}`,
      `t=${T},v1=${"zz".repeat(32)}`,
      `t=${T},v0=${VECTOR}`,
    ]) {
      expect(await verifyWebhook(SECRET, BODY, bad, T), String(bad)).toBe(false);
    }
  });

  it("accepts a header with spaces, uppercase hex, unknown keys and several v1 values if one matches", async () => {
    const other = "0".repeat(64);
    expect(await verifyWebhook(SECRET, BODY, `t=${T}, v1=${VECTOR.toUpperCase()}`, T)).toBe(true);
    expect(await verifyWebhook(SECRET, BODY, `t=${T},v2=abc,v1=${other},v1=${VECTOR}`, T)).toBe(true);
    expect(await verifyWebhook(SECRET, BODY, `t=${T},v1=${other}`, T)).toBe(false);
  });

  it("round-trips with signWebhook for an empty body and for non-ASCII text", async () => {
    for (const body of ["", "héllo → 世界"]) {
      const signed = await signWebhook(SECRET, body, T);
      expect(await verifyWebhook(SECRET, body, signed, T)).toBe(true);
      expect(await verifyWebhook(SECRET, `${body} `, signed, T)).toBe(false);
    }
  });
});
