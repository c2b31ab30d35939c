/** What the benchmark ran on: cores, CPU, memory, versions, date. */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";

export interface Machine {
  nproc: string;
  cpu: string;
  memory: string;
  os: string;
  node: string;
  wrangler: string;
  workerdWrangler: string;
  workerdBench: string;
  miniflare: string;
  sqlite: string;
  bullmq: string;
  ioredis: string;
  pgBoss: string;
  date: string;
}

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
}

function pkgVersion(root: string, path: string): string {
  try {
    return (JSON.parse(readFileSync(join(root, "node_modules", path, "package.json"), "utf8")) as { version: string })
      .version;
  } catch {
    return "unknown";
  }
}

export function describeMachine(root: string, sqliteVersion: string): Machine {
  const osRelease = (() => {
    try {
      return /PRETTY_NAME="([^"]+)"/.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "unknown";
    } catch {
      return "unknown";
    }
  })();
  return {
    nproc: run("nproc", []),
    cpu: cpus()[0]?.model ?? "unknown",
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${osRelease}, Linux ${run("uname", ["-r"])}`,
    node: process.version,
    wrangler: pkgVersion(root, "wrangler"),
    workerdWrangler: pkgVersion(root, "wrangler/node_modules/workerd"),
    workerdBench: pkgVersion(root, "workerd"),
    miniflare: pkgVersion(root, "miniflare"),
    sqlite: sqliteVersion,
    bullmq: pkgVersion(root, "bullmq"),
    ioredis: pkgVersion(root, "ioredis"),
    pgBoss: pkgVersion(root, "pg-boss"),
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  };
}
