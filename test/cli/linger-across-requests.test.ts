import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * A linger shared by the requests of one Worker isolate (src/contracts/enqueue-linger.ts): a user's Worker
 * (test/cli/fixtures/linger-producer.ts) makes one edgeqRpc wrapper for all its requests, and each request
 * enqueues one task. workerd runs the gathered call in the request whose task came first, and cancels a
 * request that waits with nothing pending in its own context as hung: without the caller's own wait timer,
 * 15 of 20 such requests were cancelled ("would never generate a response") while their tasks were sent. Run in
 * workerd through Miniflare (two Workers, the binding a stand-in that records each call's tasks:
 * test/cli/fixtures/linger-sink.js).
 */
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

let mf: Miniflare;

beforeAll(async () => {
  const producer = await build({
    entryPoints: [fixture("linger-producer.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*", "node:*"],
    write: false,
    logLevel: "warning",
  });
  mf = new Miniflare({
    workers: [
      {
        name: "producer",
        modules: [{ type: "ESModule", path: fixture("linger-producer.mjs"), contents: producer.outputFiles[0]!.text }],
        compatibilityDate: "2026-07-30",
        serviceBindings: { EDGEQ: { name: "sink", entrypoint: "Sink" } },
      },
      {
        name: "sink",
        modules: [
          {
            type: "ESModule",
            path: fixture("linger-sink.js"),
            contents: readFileSync(fixture("linger-sink.js"), "utf8"),
          },
        ],
        compatibilityDate: "2026-07-30",
      },
    ],
  });
  await mf.ready;
});

afterAll(async () => {
  await mf?.dispose();
});

/** `n` requests at once to the producer; each answer's status and body, and the sink's calls (tasks each). */
async function requests(n: number, query = "") {
  const answers = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const response = await mf.dispatchFetch(`http://producer/?i=${i}${query}`);
      return { status: response.status, body: await response.text() };
    }),
  );
  const sink = await mf.getWorker("sink");
  const calls = (await (await sink.fetch("http://sink/")).json()) as number[];
  return { answers, calls };
}

describe("a linger shared by a Worker's requests", () => {
  it("answers every request with its own task, from calls of many tasks", async () => {
    const { answers, calls } = await requests(20);
    expect(answers).toEqual(
      answers.map((_, i) => ({
        status: 200,
        body: JSON.stringify({ id: `task-${i}`, state: "pending", deduplicated: false }),
      })),
    );
    expect(calls.reduce((a, b) => a + b, 0)).toBe(20);
    expect(calls.length).toBeLessThan(20);
  });

  it("makes one call per request when each request makes its own wrapper", async () => {
    const { answers, calls } = await requests(20, "&own");
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(calls).toEqual(Array.from({ length: 20 }, () => 1));
  });
});
