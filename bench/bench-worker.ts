/**
 * The bench worker: runs inside workerd (Miniflare), bundled by esbuild from this file, with real local
 * D1 bound as DB (and DB_1, DB_2, … for section 7's shards). Node drives it with one POST per operation
 * (bench/workerd-host.ts); no HTTP API — the engine functions are called directly. The Worker's Durable
 * Object classes are exported and bound too, so the growth section can run the real cron tick.
 */
import { runPackBill, type PackBillRequest } from "./bill-packs";
import type { Env } from "../src/env";
import {
  bulkEnqueue,
  burnDown,
  holdTasks,
  probeLeases,
  probeReap,
  runCostScenario,
  type Scenario,
  type SystemName,
} from "./engine-ops";
import { checkGuarantees, modelBurn, modelEnqueue, type ModelBurnRequest } from "./packs-ops";
import {
  scaleBurn,
  scaleEnqueue,
  scaleProbe,
  shardBindings,
  type ScaleBurnRequest,
  type ScaleEnqueueRequest,
} from "./scale-ops";
import { leaseOnce, probeTick } from "./tick-ops";
import { timePackCalls } from "./packs-call-time";
import { timeCycles } from "./served-call-time";
import { enqueueMixed, layoutCounts } from "./served-store-ops";
import { flowConfig, flowEnqueue, flowLife, flowWaits, type FlowEnqueueRequest } from "./flow-ops";
import type { FlowConfig } from "../src/contracts/flow";

import {
  Coordinator as WorkerCoordinator,
  EventHub as WorkerEventHub,
  Scheduler as WorkerScheduler,
} from "../src/index";
import { metered } from "./bill-meter";
import { runBill, type BillRequest } from "./bill-ops";
import { runDepsOps, type DepsOpsRequest } from "./deps-ops";
import { AUDIT_HOST, auditFetch, auditLayouts, auditTick } from "./audit-worker";

// The Worker's own Durable Object classes, under the names wrangler.toml binds, with what they do metered for
// the bill (bench/bill-meter.ts): same code, a counter beside each storage call.
export const Coordinator = metered(WorkerCoordinator);
export const EventHub = metered(WorkerEventHub);
export const Scheduler = metered(WorkerScheduler);

interface BenchEnv {
  DB: D1Database;
  [binding: string]: unknown;
}

export type BenchRequest =
  | { op: "migrate"; statements: string[]; shard?: number }
  | { op: "audit-tick" }
  | { op: "audit-layouts"; ids: string[] }
  | ({ op: "bill" } & BillRequest)
  | ({ op: "bill-packs" } & PackBillRequest)
  | ({ op: "deps" } & DepsOpsRequest)
  | { op: "cost"; system: SystemName; scenario: Scenario; batch: number; tasks: number; queue: string }
  | { op: "enqueue"; system: SystemName; queue: string; count: number; chunk?: number }
  | { op: "burn"; system: SystemName; queue: string; batch: number; maxTasks: number; carry?: boolean }
  | { op: "probe-lease"; queue: string; batch: number; leases: number; system?: SystemName }
  | { op: "probe-reap" }
  | { op: "hold"; queue: string; count: number }
  | { op: "tick" }
  | { op: "lease-once"; queue: string }
  | ({ op: "scale-enqueue" } & ScaleEnqueueRequest)
  | ({ op: "scale-burn" } & ScaleBurnRequest)
  | { op: "scale-probe"; batch: number; tasks: number; queue: string }
  | { op: "model-enqueue"; system: "edgeq" | "packs"; queue: string; count: number }
  | ({ op: "model-burn" } & ModelBurnRequest)
  | { op: "packs-guarantees"; queue: string }
  | { op: "packs-call-time"; queue: string; cycles: number }
  | { op: "cycle-times"; system: SystemName; queue: string; batch: number; cycles: number; carry?: boolean }
  | { op: "enqueue-mixed"; queue: string; count: number; step: number }
  | { op: "layout-counts"; queue: string }
  | ({ op: "flow-enqueue" } & FlowEnqueueRequest)
  | { op: "flow-config"; queue: string; flow: FlowConfig | null }
  | { op: "flow-waits"; queue: string; key: string; tasks: number; max: number; maxLeases: number }
  | { op: "flow-life"; queue: string; keyed: boolean; flow: FlowConfig | null };

async function handle(req: BenchRequest, env: BenchEnv): Promise<unknown> {
  switch (req.op) {
    case "migrate": {
      const db = shardBindings(env)[req.shard ?? 0];
      if (!db) throw new Error(`migrate: no D1 binding for shard ${req.shard}`);
      for (const s of req.statements) await db.prepare(s).run();
      return { ok: true };
    }
    case "audit-tick":
      return auditTick(env);
    case "audit-layouts":
      return auditLayouts(env.DB, req.ids);
    case "bill":
      return runBill(env as unknown as Env, req);
    case "bill-packs":
      return runPackBill(env.DB, req);
    case "deps":
      return runDepsOps(env.DB, req);
    case "cost":
      return runCostScenario(env.DB, req.system, req.scenario, req.batch, req.tasks, req.queue);
    case "enqueue":
      return bulkEnqueue(env.DB, req.system, req.queue, req.count, req.chunk);
    case "hold":
      return { held: await holdTasks(env.DB, req.queue, req.count) };
    case "burn":
      return { done: await burnDown(env.DB, req.system, req.queue, req.batch, req.maxTasks, req.carry) };
    case "probe-lease":
      return probeLeases(env.DB, req.queue, req.batch, req.leases, req.system);
    case "probe-reap":
      return probeReap(env.DB);
    case "tick":
      return probeTick(env as unknown as Env, Date.now());
    case "lease-once":
      return leaseOnce(env.DB, req.queue);
    case "scale-enqueue":
      return { enqueued: await scaleEnqueue(shardBindings(env), req) };
    case "scale-burn":
      return scaleBurn(shardBindings(env), req);
    case "scale-probe":
      return scaleProbe(env.DB, req.batch, req.tasks, req.queue);
    case "model-enqueue":
      return modelEnqueue(env.DB, req.system, req.queue, req.count);
    case "model-burn":
      return modelBurn(env.DB, req);
    case "packs-guarantees":
      return checkGuarantees(env.DB, req.queue);
    case "packs-call-time":
      return timePackCalls(env.DB, req.queue, req.cycles);
    case "enqueue-mixed":
      return enqueueMixed(env.DB, req.queue, req.count, req.step);
    case "layout-counts":
      return layoutCounts(env.DB, req.queue);
    case "cycle-times":
      return timeCycles(env.DB, req.system, req.queue, req.batch, req.cycles, req.carry);
    case "flow-enqueue":
      return flowEnqueue(env.DB, req);
    case "flow-config":
      return flowConfig(env.DB, req.queue, req.flow).then(() => ({ ok: true }));
    case "flow-waits":
      return flowWaits(env.DB, req);
    case "flow-life":
      return flowLife(env.DB, req);
  }
}

export default {
  async fetch(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    // Section 12's API requests: the Worker itself answers them (bench/audit-worker.ts).
    if (new URL(request.url).host === AUDIT_HOST) return auditFetch(request, env, ctx);
    try {
      const body = (await request.json()) as BenchRequest;
      return Response.json(await handle(body, env));
    } catch (error) {
      // Drizzle wraps D1's error ("Failed query: …"): D1's own message is its cause.
      const cause = error instanceof Error && error.cause !== undefined ? `\ncause: ${String(error.cause)}` : "";
      const message = error instanceof Error ? `${error.message}${cause}\n${error.stack ?? ""}` : String(error);
      return Response.json({ error: message }, { status: 500 });
    }
  },
};
