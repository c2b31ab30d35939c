/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import workerCode from "../../create-edgeq/template/src/index.ts?raw";
import sdkDoc from "../../docs/sdk.md?raw";
import nodeWorker from "../../examples/node-worker/worker.mjs?raw";

/** The code fences of a Markdown section (`## heading` up to the next `## `), in order. */
function fences(markdown: string, heading: string): string[] {
  const section = markdown.split(`\n## ${heading}\n`)[1]?.split("\n## ")[0];
  if (section === undefined) throw new Error(`no "## ${heading}" section`);
  return [...section.matchAll(/```\w*\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

// What a new user reads in the README and docs/sdk.md is what `npm run examples` (scripts/run-examples.mjs)
// installs from the packed tarballs and runs, character for character: the project `npm create edgeq`
// writes, the node-worker example.
describe("README's Use edgeq in your own Worker", () => {
  it("starts from npm create edgeq and shows the src/index.ts it writes", () => {
    const blocks = fences(readme, "Use edgeq in your own Worker");
    expect(blocks[0]).toMatch(
      /^npm create edgeq@latest my-queue .*\ncd my-queue && npm install .*\nnpm test .*\nnpm run dev /,
    );
    expect(blocks).toContain(workerCode);
  });

  it("docs/sdk.md shows the node-worker example's worker.mjs", () => {
    expect(fences(sdkDoc, "A whole program")).toContain(nodeWorker);
  });

  it("is a guide of at most 300 lines (reference material lives in docs/)", () => {
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(300);
  });

  it("keeps the Worker's code within 30 lines", () => {
    expect(workerCode.trimEnd().split("\n").length).toBeLessThanOrEqual(30);
  });
});
