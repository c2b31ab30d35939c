import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readSettings, type Env } from "../../src/env";

const withSettings = (ENVIRONMENT: string | undefined, EDGEQ_TOKEN: string | undefined): Env => ({
  ...env,
  ENVIRONMENT,
  EDGEQ_TOKEN,
});

describe("readSettings (kept by the raw values it read)", () => {
  it("reads a changed secret at once: rotated tokens, a token removed", () => {
    expect(readSettings(withSettings("production", "a")).EDGEQ_TOKEN).toEqual(["a"]);
    expect(readSettings(withSettings("production", "a")).EDGEQ_TOKEN).toEqual(["a"]);
    expect(readSettings(withSettings("production", "a, b")).EDGEQ_TOKEN).toEqual(["a", "b"]);
    expect(readSettings(withSettings("production", undefined)).EDGEQ_TOKEN).toEqual([]);
    expect(readSettings(withSettings(undefined, "c"))).toEqual({ ENVIRONMENT: "production", EDGEQ_TOKEN: ["c"] });
  });

  it("refuses a malformed value every time, after a good read too", () => {
    readSettings(withSettings("development", "a"));
    expect(() => readSettings(withSettings("staging", "a"))).toThrow(/invalid environment: ENVIRONMENT/);
    expect(() => readSettings(withSettings("staging", "a"))).toThrow(/invalid environment: ENVIRONMENT/);
  });

  it("hands out a frozen result: one request cannot change another's settings", () => {
    const settings = readSettings(withSettings("production", "a"));
    expect(Object.isFrozen(settings)).toBe(true);
    expect(Object.isFrozen(settings.EDGEQ_TOKEN)).toBe(true);
  });
});
