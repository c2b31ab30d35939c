/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import { CLOCK_RANGE_FILES, clockRange, FUTURE_CLOCK_RANGE_FILES, type ClockRangeFile } from "../support/clock-range";

/** Every test file's text, by its name under test/ without `.test.ts`. */
const TEST_FILES = Object.fromEntries(
  Object.entries(import.meta.glob<string>("../**/*.test.ts", { query: "?raw", import: "default", eager: true })).map(
    ([path, text]) => [path.replace(/^\.\.\//, "").replace(/\.test\.ts$/, ""), text],
  ),
);

const REGISTERED: readonly ClockRangeFile[] = [...CLOCK_RANGE_FILES, ...FUTURE_CLOCK_RANGE_FILES];

// test/support/clock-range.ts gives each file that sweeps by time a range of its own; these keep the registry
// honest: no range for a file that is gone, none used by another file's name, none reaching today.
describe("test files' clock ranges", () => {
  it("belong to test files that ask for their own, and no file asks for another's", () => {
    expect(Object.keys(TEST_FILES).length).toBeGreaterThan(50);
    for (const name of REGISTERED) {
      expect(TEST_FILES[name], `test/${name}.test.ts`).toContain(`clockRange("${name}")`);
    }
    for (const [name, text] of Object.entries(TEST_FILES)) {
      for (const [, asked] of text.matchAll(/clockRange\("([^"]+)"\)/g)) expect(asked, `in ${name}`).toBe(name);
    }
  });

  it("do not overlap, and the past ones end a year before today", () => {
    const ranges = REGISTERED.map((name) => clockRange(name)).sort((a, b) => a.start - b.start);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.start).toBeGreaterThanOrEqual(ranges[i - 1]!.end);
    const lastPast = clockRange(CLOCK_RANGE_FILES.at(-1)!);
    expect(lastPast.end).toBeLessThan(Date.now() - 365 * 86_400_000);
    expect(clockRange(FUTURE_CLOCK_RANGE_FILES[0]).start).toBeGreaterThan(Date.now() + 50 * 365 * 86_400_000);
  });
});
