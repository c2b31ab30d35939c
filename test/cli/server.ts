import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import type {} from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    edgeqUrl: string;
    edgeqToken: string;
  }
}

const TOKEN = "cli-test-token";
const WRANGLER = join(process.cwd(), "node_modules", ".bin", "wrangler");

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

/**
 * Starts a real `wrangler dev` (the local environment, fresh state in a temporary directory, cron testing
 * on) for the CLI tests, and stops it afterwards.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const state = mkdtempSync(join(tmpdir(), "edgeq-cli-"));
  const port = await freePort();
  const env = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" };
  const migrate = spawnSync(
    WRANGLER,
    ["d1", "migrations", "apply", "DB", "--local", "--env", "local", "--persist-to", state],
    {
      env,
      encoding: "utf8",
    },
  );
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
  const server: ChildProcess = spawn(
    WRANGLER,
    [
      "dev",
      "--env",
      "local",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      state,
      "--test-scheduled",
      "--var",
      `EDGEQ_TOKEN:${TOKEN}`,
      "--show-interactive-dev-session=false",
    ],
    { env, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  server.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  server.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline || server.exitCode !== null) {
      throw new Error(`wrangler dev did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  project.provide("edgeqUrl", url);
  project.provide("edgeqToken", TOKEN);
  return async () => {
    if (server.pid) process.kill(-server.pid, "SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    rmSync(state, { recursive: true, force: true });
  };
}
