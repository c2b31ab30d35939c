/**
 * A CPU profile of the Worker inside workerd, taken through workerd's DevTools inspector (Miniflare's
 * `inspectorPort`): the V8 sampling profiler of the Worker's isolate, started before some work and stopped
 * after it. Summarised by self time per function (and per package), the way DevTools' bottom-up view
 * does; the raw profile can be written as a `.cpuprofile` for DevTools.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** One line of the bottom-up summary. */
export interface SelfTime {
  name: string;
  /** Share of the profile's samples spent in this function (or package) itself. */
  pct: number;
}

export interface WorkerCpuProfile {
  /** Share of samples in which the isolate ran JavaScript (the rest: idle, or the runtime's own C++). */
  busyPct: number;
  byFunction: SelfTime[];
  byPackage: SelfTime[];
}

/** Sends DevTools protocol commands over one WebSocket. */
async function connect(url: string) {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error(`inspector: cannot connect to ${url}`)), { once: true });
  });
  let next = 1;
  const pending = new Map<number, (result: unknown) => void>();
  ws.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  return {
    send<T>(method: string, params: object = {}): Promise<T> {
      const id = next++;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise<T>((resolve) => pending.set(id, resolve as (r: unknown) => void));
    },
    close: () => ws.close(),
  };
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * The original source file of each generated (line, column) of a bundle, from its source map (v3): enough to
 * say which module of src/ or which package a profiled function is in.
 */
export function sourceLookup(mapFile: string): (line: number, column: number) => string | null {
  const map = JSON.parse(readFileSync(mapFile, "utf8")) as { sources: string[]; mappings: string };
  const lines: Array<Array<[column: number, source: number]>> = [];
  let source = 0;
  for (const text of map.mappings.split(";")) {
    const segments: Array<[number, number]> = [];
    let column = 0;
    for (const segment of text.split(",")) {
      if (!segment) continue;
      const values: number[] = [];
      let value = 0;
      let shift = 0;
      for (const ch of segment) {
        const digit = BASE64.indexOf(ch);
        value += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      column += values[0]!;
      if (values.length > 1) source += values[1]!;
      segments.push([column, source]);
    }
    lines.push(segments);
  }
  return (line, column) => {
    const segments = lines[line] ?? [];
    let found: number | null = null;
    for (const [c, s] of segments) {
      if (c > column) break;
      found = s;
    }
    return found === null ? null : (map.sources[found] ?? null);
  };
}

/** Where a frame's code comes from: a package under node_modules, the Worker's own src/ (or the bench's
 * bench/, whose Worker entry wraps it: bench/timed-worker.ts), or the runtime. */
function originOf(url: string, fn: string, file: string | null): string {
  if (!url) return fn.startsWith("(") ? fn : "(runtime)";
  const path = file ?? url;
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  // drizzle-orm's own source map names its files `src/…` with no package: its frames land in node_modules/src/.
  if (match) return match[1] === "src" ? "drizzle-orm" : match[1]!;
  const src = /(?:^|\/)((?:src|bench)\/.*)$/.exec(path);
  if (src) return src[1]!;
  return url.startsWith("cloudflare-internal:") ? url : "(bundle)";
}

/** Bottom-up self time of a profile, each frame placed in its module through the bundle's source map. */
export function summarise(
  profile: CpuProfile,
  top = 15,
  lookup?: (line: number, column: number) => string | null,
): WorkerCpuProfile {
  const total = profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0) || 1;
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let idle = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (functionName === "(idle)") idle += hits;
    const file = lookup && url && !url.startsWith("cloudflare-internal:") ? lookup(lineNumber, columnNumber) : null;
    const pkg = originOf(url, functionName, file);
    const name = `${functionName || "(anonymous)"}${url ? ` (${pkg})` : ""}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + hits);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + hits);
  }
  const rank = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, hits]) => ({ name, pct: (hits / total) * 100 }));
  return { busyPct: ((total - idle) / total) * 100, byFunction: rank(byFunction), byPackage: rank(byPackage) };
}

/**
 * Profiles the Worker's isolate while `work` runs. `inspectorPort` is workerd's; the Worker's target is the
 * one whose title or URL names `worker` (Miniflare names it after the worker, e.g. "edgeq").
 *
 * @example
 * const profile = await profileWorker(9229, "edgeq", () => burnDown(), "/tmp/worker.cpuprofile", "index.js.map");
 */
export async function profileWorker(
  inspectorPort: number,
  worker: string,
  work: () => Promise<void>,
  rawFile?: string,
  sourceMap?: string,
): Promise<WorkerCpuProfile> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{
    title?: string;
    id?: string;
    webSocketDebuggerUrl?: string;
  }>;
  const target =
    targets.find((t) => t.title === worker || t.id === worker) ??
    targets.find((t) => (t.webSocketDebuggerUrl ?? "").endsWith(`/${worker}`));
  const url = target?.webSocketDebuggerUrl ?? `ws://127.0.0.1:${inspectorPort}/core:user:${worker}`;
  const inspector = await connect(url);
  try {
    await inspector.send("Profiler.enable");
    // 200 µs between samples (V8's default is 1 ms): enough samples from a run of seconds.
    await inspector.send("Profiler.setSamplingInterval", { interval: 200 });
    await inspector.send("Profiler.start");
    await work();
    const { profile } = await inspector.send<{ profile: CpuProfile }>("Profiler.stop");
    if (rawFile) writeFileSync(rawFile, JSON.stringify(profile));
    return summarise(profile, 15, sourceMap && existsSync(sourceMap) ? sourceLookup(sourceMap) : undefined);
  } finally {
    inspector.close();
  }
}
