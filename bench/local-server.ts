/**
 * The local edgeq server for the end-to-end section: `wrangler dev --env local` on a free port with a
 * fresh --persist-to directory (migrations applied first, as `npm start` does), stopped afterwards.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep } from "./stats";

export const BENCH_TOKEN = "bench-token";

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port")),
      );
    });
  });
}

export interface LocalServer {
  url: string;
  stop(): Promise<void>;
}

export async function startLocalServer(root: string): Promise<LocalServer> {
  const wrangler = join(root, "node_modules", ".bin", "wrangler");
  const state = mkdtempSync(join(tmpdir(), "edgeq-bench-http-"));
  const port = await freePort();
  const env = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" };
  const migrate = spawnSync(
    wrangler,
    ["d1", "migrations", "apply", "DB", "--local", "--env", "local", "--persist-to", state],
    { cwd: root, env, encoding: "utf8" },
  );
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
  const server = spawn(
    wrangler,
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
      "--var",
      `EDGEQ_TOKEN:${BENCH_TOKEN}`,
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
    ],
    { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  server.stdout?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  server.stderr?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (server.pid && server.exitCode === null) {
      process.kill(-server.pid, "SIGTERM");
      for (let i = 0; i < 50 && server.exitCode === null; i++) await sleep(100);
      if (server.exitCode === null) process.kill(-server.pid, "SIGKILL");
    }
    rmSync(state, { recursive: true, force: true });
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline || server.exitCode !== null) {
      await stop();
      throw new Error(`wrangler dev did not start:\n${output}`);
    }
    await sleep(250);
  }
  return { url, stop };
}
