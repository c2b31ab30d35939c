/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import workerCode from "../../examples/queue-worker/src/index.ts?raw";
import workerToml from "../../examples/queue-worker/wrangler.toml?raw";
import nodeWorker from "../../examples/node-worker/worker.mjs?raw";

/** The code fences of the README's "Use edgeq in your own Worker" section, in order. */
function fences(): string[] {
  const section = readme.split("\n## Use edgeq in your own Worker\n")[1]?.split("\n## ")[0];
  if (section === undefined) throw new Error('README.md has no "## Use edgeq in your own Worker" section');
  return [...section.matchAll(/```\w*\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

// What a new user copies from the README is the example that test/examples/examples.test.ts installs
// from the packed tarball and runs, character for character.
describe("README's Use edgeq in your own Worker", () => {
  it("shows the queue-worker example's src/index.ts and whole wrangler.toml", () => {
    const blocks = fences();
    expect(blocks).toContain(workerCode);
    expect(blocks).toContain(workerToml);
  });

  it("shows the node-worker example's worker.mjs", () => {
    expect(fences()).toContain(nodeWorker);
  });

  it("keeps the Worker's code within 30 lines", () => {
    expect(workerCode.trimEnd().split("\n").length).toBeLessThanOrEqual(30);
  });
});
