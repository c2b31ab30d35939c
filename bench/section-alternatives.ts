/**
 * Section 4: what users would pick instead, on this machine in this run — BullMQ on a local redis-server
 * and pg-boss on a local PostgreSQL, each started by the bench on a free port in a temporary directory
 * (installed with apt-get first when missing) and stopped afterwards, running the same no-op burn-down.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue, Worker } from "bullmq";
import PgBoss from "pg-boss";
import { freePort } from "./local-server";
import { sleep, spread, type Spread } from "./stats";

export interface AltRow {
  system: "BullMQ" | "pg-boss";
  /** Batch size (pg-boss fetch batchSize) or, for BullMQ, worker concurrency. */
  batch: number;
  tasks: number;
  done: number;
  capped: boolean;
  tasksPerS: Spread;
  enqueueTasksPerS: number;
  /** pg-boss: mean milliseconds per fetch call and per complete call. */
  callMs?: { fetch: number; complete: number };
}

export interface AltService {
  system: "BullMQ" | "pg-boss";
  server: string;
  config: string;
  rows: AltRow[];
  skipped?: string;
}

export interface AltOptions {
  tasks: number;
  segments: number;
  capS: number;
  log: (line: string) => void;
}

/** Measures consecutive slices of a stream of completions. */
class Segments {
  private readonly per: number;
  private next: number;
  private last: number;
  readonly rates: number[] = [];

  constructor(total: number, segments: number) {
    this.per = Math.ceil(total / segments);
    this.next = this.per;
    this.last = performance.now();
  }

  advance(done: number) {
    while (done >= this.next) {
      const now = performance.now();
      this.rates.push((this.per / (now - this.last)) * 1000);
      this.last = now;
      this.next += this.per;
    }
  }

  /** The slices' rates, or the whole partial run's rate if no slice completed. */
  result(done: number, startedAt: number): Spread {
    return spread(this.rates.length ? this.rates : [(done / (performance.now() - startedAt)) * 1000]);
  }
}

function ensureCommand(command: string, debianPackage: string, log: (line: string) => void): string | null {
  const found = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).stdout.trim();
  if (found) return found;
  log(`alternatives: ${command} missing; installing the Debian package ${debianPackage}`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  spawnSync("apt-get", ["update", "-qq"], { stdio: "ignore", env });
  spawnSync("apt-get", ["install", "-y", "-qq", debianPackage], { stdio: "ignore", env });
  return spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).stdout.trim() || null;
}

async function waitForOutput(child: ChildProcess, pattern: RegExp, what: string, timeoutMs = 30_000) {
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${output}`)), timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (pattern.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}):\n${output}`));
    });
  });
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM") {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  await Promise.race([exited, sleep(10_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

// ------------------------------------------------------------------------------------------------------

export async function runBullmq(batches: number[], opts: AltOptions): Promise<AltService> {
  const base = { system: "BullMQ" as const, server: "redis-server", config: "", rows: [] as AltRow[] };
  const bin = ensureCommand("redis-server", "redis-server", opts.log);
  if (!bin) return { ...base, skipped: "redis-server is not installed and apt-get could not install it" };
  const version = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
  const dir = mkdtempSync(join(tmpdir(), "edgeq-bench-redis-"));
  const port = await freePort();
  const config = "appendonly yes, appendfsync everysec (BullMQ's advice for durability), no RDB snapshots";
  const redis = spawn(
    bin,
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--save", ""],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const server = `${/v=(\S+)/.exec(version)?.[1] ?? version} (Debian package)`;
  try {
    await waitForOutput(redis, /Ready to accept connections/, "redis-server");
    const connection = { host: "127.0.0.1", port, maxRetriesPerRequest: null };
    for (const concurrency of batches) {
      const name = `burn-${concurrency}`;
      const queue = new Queue(name, { connection });
      const e0 = performance.now();
      for (let first = 0; first < opts.tasks; first += 1000) {
        const n = Math.min(1000, opts.tasks - first);
        await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: "noop", data: { i: first + i } })));
      }
      const enqueueRate = (opts.tasks / (performance.now() - e0)) * 1000;
      let done = 0;
      const start = performance.now();
      const segments = new Segments(opts.tasks, opts.segments);
      let finish: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const worker = new Worker(name, async () => null, { connection, concurrency, autorun: false });
      worker.on("completed", () => {
        done += 1;
        segments.advance(done);
        if (done >= opts.tasks) finish();
      });
      void worker.run();
      const capped = await Promise.race([finished.then(() => false), sleep(opts.capS * 1000).then(() => true)]);
      const tasksPerS = segments.result(done, start);
      await worker.close(true);
      await queue.obliterate({ force: true });
      await queue.close();
      opts.log(`alternatives: BullMQ concurrency ${concurrency}: ${tasksPerS.median.toFixed(0)} tasks/s`);
      base.rows.push({
        system: "BullMQ",
        batch: concurrency,
        tasks: opts.tasks,
        done,
        capped,
        tasksPerS,
        enqueueTasksPerS: enqueueRate,
      });
    }
    return { ...base, server: `redis-server ${server}`, config };
  } catch (error) {
    return { ...base, rows: [], skipped: `BullMQ run failed: ${error instanceof Error ? error.message : error}` };
  } finally {
    await stopChild(redis);
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------------

function postgresBin(log: (line: string) => void): string | null {
  const find = () => {
    const root = "/usr/lib/postgresql";
    if (!existsSync(root)) return null;
    const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(join(root, v, "bin", "postgres"))) return join(root, v, "bin");
    return null;
  };
  if (find()) return find();
  ensureCommand("psql", "postgresql", log);
  return find();
}

export async function runPgBoss(batches: number[], opts: AltOptions): Promise<AltService> {
  const base = { system: "pg-boss" as const, server: "PostgreSQL", config: "", rows: [] as AltRow[] };
  const bin = postgresBin(opts.log);
  if (!bin) return { ...base, skipped: "PostgreSQL is not installed and apt-get could not install it" };
  const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
  const runAsRoot = process.getuid?.() === 0;
  if (runAsRoot && ids.status !== 0) return { ...base, skipped: "running as root and there is no postgres user" };
  const uid = Number(ids.stdout.trim());
  const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
  const asPostgres = (cmd: string, args: string[]) =>
    (runAsRoot ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args]) as [string, string[]];
  const dir = mkdtempSync(join(tmpdir(), "edgeq-bench-pg-"));
  if (runAsRoot) chownSync(dir, uid, gid);
  const data = join(dir, "data");
  const port = await freePort();
  const version = execFileSync(join(bin, "postgres"), ["--version"], { encoding: "utf8" }).trim();
  const config = "defaults (fsync on, synchronous_commit on), shared_buffers 128 MB";
  let pg: ChildProcess | null = null;
  try {
    const [initCmd, initArgs] = asPostgres(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres"]);
    const init = spawnSync(initCmd, initArgs, { encoding: "utf8" });
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
    const [pgCmd, pgArgs] = asPostgres(join(bin, "postgres"), [
      "-D",
      data,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
    ]);
    pg = spawn(pgCmd, pgArgs, { stdio: ["ignore", "pipe", "pipe"] });
    await waitForOutput(pg, /ready to accept connections/, "postgres");
    const boss = new PgBoss({
      host: "127.0.0.1",
      port,
      user: "postgres",
      database: "postgres",
      max: 4,
      supervise: false,
      schedule: false,
    });
    boss.on("error", (error) => opts.log(`alternatives: pg-boss error: ${error.message}`));
    await boss.start();
    try {
      for (const batch of batches) {
        const name = `burn-${batch}`;
        await boss.createQueue(name);
        const e0 = performance.now();
        for (let first = 0; first < opts.tasks; first += 1000) {
          const n = Math.min(1000, opts.tasks - first);
          await boss.insert(Array.from({ length: n }, (_, i) => ({ name, data: { i: first + i } })));
        }
        const enqueueRate = (opts.tasks / (performance.now() - e0)) * 1000;
        let done = 0;
        const start = performance.now();
        const deadline = start + opts.capS * 1000;
        const segments = new Segments(opts.tasks, opts.segments);
        let fetchMs = 0;
        let completeMs = 0;
        let calls = 0;
        while (done < opts.tasks && performance.now() < deadline) {
          const t0 = performance.now();
          const jobs = await boss.fetch(name, { batchSize: batch });
          const t1 = performance.now();
          if (jobs.length === 0) break;
          await boss.complete(
            name,
            jobs.map((j) => j.id),
          );
          fetchMs += t1 - t0;
          completeMs += performance.now() - t1;
          calls += 1;
          done += jobs.length;
          segments.advance(done);
        }
        const capped = done < opts.tasks;
        const tasksPerS = segments.result(done, start);
        opts.log(`alternatives: pg-boss batch ${batch}: ${tasksPerS.median.toFixed(0)} tasks/s`);
        base.rows.push({
          system: "pg-boss",
          batch,
          tasks: opts.tasks,
          done,
          capped,
          tasksPerS,
          enqueueTasksPerS: enqueueRate,
          callMs: { fetch: fetchMs / Math.max(calls, 1), complete: completeMs / Math.max(calls, 1) },
        });
      }
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
    return { ...base, server: `${version.replace("postgres (PostgreSQL) ", "PostgreSQL ")} (Debian package)`, config };
  } catch (error) {
    return { ...base, rows: [], skipped: `pg-boss run failed: ${error instanceof Error ? error.message : error}` };
  } finally {
    if (pg) await stopChild(pg, "SIGINT");
    rmSync(dir, { recursive: true, force: true });
  }
}
