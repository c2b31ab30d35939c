import { describe, expect, it } from "vitest";
import { hex, hmacSha256, timingSafeEqual } from "../../src/contracts/crypto";

/** Bytes from hex digits (test vectors are written that way). */
function bytes(hexDigits: string): Uint8Array {
  return Uint8Array.from(hexDigits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

describe("hex", () => {
  it("writes each byte as two lower-case digits, leading zeros kept", () => {
    expect(hex(new Uint8Array([0, 1, 15, 16, 171, 255]))).toBe("00010f10abff");
    expect(hex(new Uint8Array([0xde, 0xad, 0xbe, 0xef]).buffer)).toBe("deadbeef");
    expect(hex(new Uint8Array())).toBe("");
  });
});

describe("hmacSha256", () => {
  // RFC 4231, section 4.2: test case 1.
  it("matches RFC 4231 test case 1 (20-byte key of 0x0b, 'Hi There')", async () => {
    const mac = await hmacSha256(bytes("0b".repeat(20)), "Hi There");
    expect(hex(mac)).toBe("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  });

  // RFC 4231, section 4.3: test case 2 (a key shorter than the block, given as text).
  it("matches RFC 4231 test case 2 (key 'Jefe', 'what do ya want for nothing?')", async () => {
    const mac = await hmacSha256("Jefe", "what do ya want for nothing?");
    expect(hex(mac)).toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  });

  it("takes text as its UTF-8 bytes: the same MAC for a string and its encoding", async () => {
    const encoder = new TextEncoder();
    expect(hex(await hmacSha256(encoder.encode("Jefe"), encoder.encode("what do ya want for nothing?")))).toBe(
      hex(await hmacSha256("Jefe", "what do ya want for nothing?")),
    );
  });
});

describe("timingSafeEqual", () => {
  it("is true for equal text or bytes, false for any difference", () => {
    expect(timingSafeEqual("s3cret-token", "s3cret-token")).toBe(true);
    expect(timingSafeEqual(bytes("00ff10"), bytes("00ff10"))).toBe(true);
    expect(timingSafeEqual("s3cret-token", "s3cret-tokeN")).toBe(false);
    expect(timingSafeEqual("s3cret-token", "S3cret-token")).toBe(false);
    expect(timingSafeEqual("", "")).toBe(true);
  });

  it("answers false for different lengths without throwing (a prefix, an empty string, longer)", () => {
    expect(timingSafeEqual("s3cret-token", "s3cret")).toBe(false);
    expect(timingSafeEqual("s3cret", "s3cret-token")).toBe(false);
    expect(timingSafeEqual("s3cret-token", "")).toBe(false);
    expect(timingSafeEqual(bytes("00"), bytes("0000"))).toBe(false);
  });

  it("compares text as UTF-8: a character and its byte-for-byte twin are equal, look-alikes are not", () => {
    expect(timingSafeEqual("é", new TextEncoder().encode("é"))).toBe(true);
    // "é" as one code point vs "e" + combining accent: the same on screen, different bytes.
    expect(timingSafeEqual("\u00e9", "e\u0301")).toBe(false);
  });
});
