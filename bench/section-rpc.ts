/**
 * Section 3c: a producer Worker reaching edgeq through its Workers RPC binding, against HTTP. The real
 * edgeq Worker (src/index.ts) and a small producer Worker run in one workerd (bench/edgeq-host.ts); the
 * producer times, inside workerd, sequential enqueues and leases of one task each, the two paths call by
 * call in turn:
 * - rpc: `env.EDGEQ.enqueue(queue, body)` on a service binding to the EdgeqRpc entrypoint, its outcome
 *   (`{ ok, value | error }`) unwrapped as `edgeqRpc` does;
 * - binding-http: the same request as HTTP, `env.EDGEQ_HTTP.fetch(...)` on a service binding to the
 *   Worker's fetch handler (the HTTP API, auth and JSON, without a network);
 * and this process times the same calls over the network (`fetch` to the served port), what a producer
 * outside Cloudflare, or one not bound to edgeq, does.
 */
import { startEdgeqInWorkerd } from "./edgeq-host";
import { percentile } from "./stats";

const TOKEN = "bench-rpc-token";

export interface RpcLatency {
  path: "rpc" | "binding-http" | "network-http";
  op: "enqueue" | "lease";
  calls: number;
  meanMs: number;
  p50: number;
  p99: number;
}

export interface RpcSection {
  rows: RpcLatency[];
}

/**
 * The producer Worker. workerd's clock moves only across I/O, which is what each timed call is; its
 * resolution is a millisecond, so each row also reports the mean over all calls (total / calls).
 */
const PRODUCER = `
export default {
  async fetch(request, env) {
    const { op, queues, calls } = await request.json();
    const headers = { Authorization: "Bearer ${TOKEN}", "Content-Type": "application/json" };
    const http = async (route, body, status) => {
      const res = await env.EDGEQ_HTTP.fetch("http://edgeq" + route, { method: "POST", headers, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status !== status) throw new Error(route + ": " + res.status + " " + text);
      return JSON.parse(text);
    };
    // A binding call resolves to { ok: true, value } or { ok: false, error } (src/rpc/rpc-outcome.ts):
    // unwrapped here as edgeqRpc (edgeq/rpc) does, so a refusal fails the run instead of passing as a call.
    const rpc = async (method, queue, body) => {
      const out = await env.EDGEQ[method](queue, body);
      if (!out.ok) throw new Error("rpc " + method + ": " + out.error.status + " " + JSON.stringify(out.error));
      return out.value;
    };
    const call = async (path, queue, i) => {
      if (op === "enqueue") {
        const body = { payload: { i } };
        if (path === "rpc") await rpc("enqueue", queue, body);
        else await http("/v1/queues/" + queue + "/tasks", body, 201);
        return;
      }
      const got = path === "rpc"
        ? await rpc("lease", queue, { max: 1 })
        : await http("/v1/queues/" + queue + "/lease", { max: 1 }, 200);
      if (got.tasks.length !== 1) throw new Error("lease " + i + ": " + got.tasks.length + " tasks");
    };
    // The two paths call by call in turn, so both see the same machine.
    const ms = { rpc: [], "binding-http": [] };
    const total = { rpc: 0, "binding-http": 0 };
    for (let i = 0; i < calls; i++) {
      for (const path of i % 2 === 0 ? ["rpc", "binding-http"] : ["binding-http", "rpc"]) {
        const t0 = Date.now();
        await call(path, queues[path], i);
        const took = Date.now() - t0;
        ms[path].push(took);
        total[path] += took;
      }
    }
    return Response.json({ ms, total });
  },
};
`;

/** Enqueue `calls` tasks into `queue` in one request (untimed set-up for the lease rows). */
async function fill(url: string, queue: string, calls: number) {
  const tasks = Array.from({ length: calls }, (_, i) => ({ payload: { i } }));
  const res = await fetch(`${url}/v1/queues/${queue}/tasks`, {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify({ tasks }),
  });
  if (res.status !== 201) throw new Error(`fill ${queue}: ${res.status} ${await res.text()}`);
}

function row(path: RpcLatency["path"], op: RpcLatency["op"], ms: number[], total: number): RpcLatency {
  return { path, op, calls: ms.length, meanMs: total / ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

export async function runRpcSection(root: string, opts: { calls: number; log: (line: string) => void }) {
  const host = await startEdgeqInWorkerd(
    root,
    { EDGEQ_TOKEN: TOKEN },
    {
      workers: [
        {
          name: "producer",
          modules: [{ type: "ESModule", path: "producer.mjs", contents: PRODUCER }],
          compatibilityDate: "2026-11-01",
          serviceBindings: { EDGEQ: { name: "edgeq", entrypoint: "EdgeqRpc" }, EDGEQ_HTTP: "edgeq" },
        },
      ],
    },
  );
  try {
    const rows: RpcLatency[] = [];
    let n = 0;
    const inProducer = async (op: "enqueue" | "lease") => {
      const queues = { rpc: `rpc-bench-rpc-${op}-${n}`, "binding-http": `rpc-bench-http-${op}-${n++}` };
      if (op === "lease") for (const queue of Object.values(queues)) await fill(host.url, queue, opts.calls);
      const res = await host.fetchWorker("producer", "http://producer/", {
        method: "POST",
        body: JSON.stringify({ op, queues, calls: opts.calls }),
      });
      if (res.status !== 200) throw new Error(`producer ${op}: ${res.status} ${await res.text()}`);
      const { ms, total } = (await res.json()) as {
        ms: Record<"rpc" | "binding-http", number[]>;
        total: Record<"rpc" | "binding-http", number>;
      };
      for (const path of ["rpc", "binding-http"] as const) rows.push(row(path, op, ms[path], total[path]));
    };
    const overNetwork = async (op: "enqueue" | "lease") => {
      const queue = `rpc-bench-net-${op}-${n++}`;
      if (op === "lease") await fill(host.url, queue, opts.calls);
      const ms: number[] = [];
      const started = performance.now();
      for (let i = 0; i < opts.calls; i++) {
        const t0 = performance.now();
        const route = op === "enqueue" ? "tasks" : "lease";
        const res = await fetch(`${host.url}/v1/queues/${queue}/${route}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
          body: JSON.stringify(op === "enqueue" ? { payload: { i } } : { max: 1 }),
        });
        await res.arrayBuffer();
        if (res.status !== (op === "enqueue" ? 201 : 200)) throw new Error(`${route}: ${res.status}`);
        ms.push(performance.now() - t0);
      }
      rows.push(row("network-http", op, ms, performance.now() - started));
    };
    // A warm-up of each path first, untimed: the first calls compile code and open the databases.
    for (const op of ["enqueue", "lease"] as const) {
      await inProducer(op);
      await overNetwork(op);
      rows.length = 0;
    }
    for (const op of ["enqueue", "lease"] as const) {
      await inProducer(op);
      await overNetwork(op);
      for (const r of rows.filter((x) => x.op === op)) {
        opts.log(
          `rpc: ${r.op} via ${r.path}: mean ${r.meanMs.toFixed(2)} ms, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`,
        );
      }
    }
    return { rows } satisfies RpcSection;
  } finally {
    await host.stop();
  }
}

const PATH_LABEL: Record<RpcLatency["path"], string> = {
  rpc: "RPC binding (`env.EDGEQ.enqueue`, `.lease`)",
  "binding-http": "HTTP API over a service binding (`env.EDGEQ_HTTP.fetch`)",
  "network-http": "HTTP API over the network (Node `fetch` to the port)",
};

/** Section 3c of docs/benchmarks.md. */
export function rpcReportSection(outcome: { value?: RpcSection; skipped?: string } | undefined, out: string[]) {
  out.push("## 3c. A producer Worker: the RPC binding against HTTP", "");
  if (!outcome?.value) {
    out.push(`Skipped in this run: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  const rows = outcome.value.rows;
  out.push(
    "The real edgeq Worker and a producer Worker in one workerd (`bench/section-rpc.ts`, `--only rpc`).",
    "Sequential calls, one task each, the two in-Worker paths call by call in turn, timed inside the producer (workerd's clock moves across I/O, by whole",
    "milliseconds, so the mean is total time over calls); the network row is timed by the bench process.",
    "Each lease takes one of tasks enqueued beforehand.",
    "",
    "| operation | path | calls | mean ms | p50 ms | p99 ms |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
  );
  for (const r of rows) {
    out.push(
      `| ${r.op} | ${PATH_LABEL[r.path]} | ${r.calls} | ${r.meanMs.toFixed(2)} | ${r.p50.toFixed(r.path === "network-http" ? 1 : 0)} | ${r.p99.toFixed(r.path === "network-http" ? 1 : 0)} |`,
    );
  }
  out.push("");
}
