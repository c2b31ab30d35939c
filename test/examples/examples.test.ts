import { spawn } from "node:child_process";
import { expect, it } from "vitest";

/**
 * The examples as a user of the package gets them: scripts/run-examples.mjs packs edgeq, installs each
 * example from the tarball in its own folder and runs its own `npm test` (a Worker embedding edgeq with a
 * processor of its own, a second Worker enqueuing through the RPC binding, a Node worker on the SDK); then
 * `npm create edgeq` on the packed create-edgeq and the same tarball: the new project's `npm test`, and its
 * `npm run dev` running a task enqueued over HTTP (scripts/try-create-edgeq.mjs).
 */
it("every example installs from the packed tarball and passes its own tests; so does a created project", async () => {
  const child = spawn(process.execPath, ["scripts/run-examples.mjs"], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  for (const stream of [child.stdout, child.stderr]) stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect(output, output.slice(-6_000)).toContain("every example passed");
  expect(code).toBe(0);
  for (const example of ["queue-worker", "producer", "node-worker"]) expect(output).toContain(`== examples/${example}`);
  expect(output).toMatch(/== create-edgeq .*npm create edgeq my-queue/);
  // The README's own lines, run as written (scripts/try-create-edgeq.mjs reads them from README.md).
  for (const line of ["cd my-queue && npm install", "npm test"]) {
    expect(output).toContain(`create-edgeq: README's \`${line}\` passed`);
  }
  expect(output).toContain("create-edgeq: README's curl calls answered");
  expect(output).toContain("create-edgeq: npm run dev served the new project; its processor completed a task");
  // The README's RPC and Node steps: the project's caller Worker and worker.mjs, run as written.
  expect(output).toMatch(
    /create-edgeq: README's `curl -X POST localhost:8788 .*answered: \{"id":"\w{26}","state":"completed"/,
  );
  expect(output).toMatch(
    /create-edgeq: README's `npm run worker` completed \w{26} and stopped on Ctrl-C \((exit 0|SIGINT)\)/,
  );
  expect(output).toContain("create-edgeq: the README's first hour passed: HTTP, RPC and a Node worker");
  expect(output).toMatch(/# fail 0/);
  expect(output).not.toMatch(/# fail [1-9]/);
});
