import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import {
  DEV_TOKEN,
  MAX_ATTEMPTS_LIMIT,
  MAX_BATCH,
  MAX_PRIORITY,
  MAX_REDRIVE_PER_CALL,
  QUEUE_NAME_PATTERN,
  QUEUE_NAME_RULE,
} from "../../src/contracts/limits";
import { edgeq } from "./commands-support";

/** Every TypeScript file under cli/, with its text. */
function cliSources(dir = join(process.cwd(), "cli")): Array<[string, string]> {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry): Array<[string, string]> => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return cliSources(path);
    return entry.name.endsWith(".ts") ? [[path, readFileSync(path, "utf8")]] : [];
  });
}

// Issue 9.2: the CLI re-typed the Worker's limits and patterns; they now come from src/contracts/limits.ts.
it("the CLI re-types none of the Worker's limits and patterns", () => {
  const retyped: Array<[string, RegExp]> = [
    ["the queue-name pattern", new RegExp(QUEUE_NAME_PATTERN.source.replace(/[[\]{}.^$\\]/g, "\\$&"))],
    ["the development token", new RegExp(`"${DEV_TOKEN}"`)],
    ["MAX_PRIORITY", /\b1_?000_?000\b/],
    ["MAX_REDRIVE_PER_CALL", /\b5_?000\b/],
    ["MAX_BATCH or MAX_ATTEMPTS_LIMIT", /max:\s*100\b|MAX_[A-Z_]+ = 100\b/],
  ];
  const found = cliSources().flatMap(([path, text]) =>
    retyped.filter(([, pattern]) => pattern.test(text)).map(([what]) => `${path}: ${what}`),
  );
  expect(found).toEqual([]);
});

it("the CLI's checks follow the limits module", async () => {
  const priority = await edgeq(["enqueue", "q", "--priority", String(MAX_PRIORITY + 1)]);
  expect(priority.code).toBe(EXIT.usage);
  expect(priority.stderr).toContain(`from ${-MAX_PRIORITY} to ${MAX_PRIORITY}`);
  const attempts = await edgeq(["enqueue", "q", "--max-attempts", String(MAX_ATTEMPTS_LIMIT + 1)]);
  expect(attempts.stderr).toContain(`from 1 to ${MAX_ATTEMPTS_LIMIT}`);
  const batch = await edgeq(["worker", "q", "--exec", "true", "--batch", String(MAX_BATCH + 1)]);
  expect(batch.stderr).toContain(`from 1 to ${MAX_BATCH}`);
  const name = "q".repeat(65);
  expect(QUEUE_NAME_PATTERN.test(name)).toBe(false);
  for (const args of [
    ["status", name],
    ["worker", name, "--exec", "true"],
    ["worker", "stop", name],
  ]) {
    const run = await edgeq(args);
    expect(run.code, args[0]).toBe(EXIT.usage);
    expect(run.stderr).toContain(QUEUE_NAME_RULE);
  }
  expect(MAX_REDRIVE_PER_CALL).toBeGreaterThan(0);
});
