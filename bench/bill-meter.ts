/**
 * The bill's meter inside the bench worker: what the Worker's Durable Objects cost, counted where they run.
 * The bench worker exports the Worker's own classes subclassed by `metered` (same code, same names as
 * wrangler.toml binds), so every object's storage calls, alarms and its own D1 statements are added here.
 * The bench worker and its objects share one isolate under Miniflare; `billUsage` is read by the same
 * module that drove the calls, and the bill checks the objects reported in (a request they saw) before it
 * trusts a zero.
 */
import { meteredD1 } from "../test/support/metered-d1";

/** What the Durable Objects did since the last reset. */
export interface ObjectUsage {
  /** Storage rows written: each key put or deleted, each setAlarm/deleteAlarm (SQLite-backed billing). */
  storageRowsWritten: number;
  /** Storage rows read: each key got (an upper bound: the storage cache may serve a repeated get unbilled). */
  storageRowsRead: number;
  /** Alarm invocations: each is a billed Durable Object request. */
  alarms: number;
  /** D1 rows the objects themselves wrote and read (e.g. a coordinator's own lease, the hub's event reads). */
  d1RowsWritten: number;
  d1RowsRead: number;
  /** Objects constructed: a zero everywhere with none constructed means nothing was metered. */
  constructed: number;
}

const usage: ObjectUsage = {
  storageRowsWritten: 0,
  storageRowsRead: 0,
  alarms: 0,
  d1RowsWritten: 0,
  d1RowsRead: 0,
  constructed: 0,
};
const d1Meters: Array<ReturnType<typeof meteredD1>> = [];

/** The objects' usage since the last reset (their D1 meters summed now). */
export function objectUsage(): ObjectUsage {
  return {
    ...usage,
    d1RowsWritten: d1Meters.reduce((n, m) => n + m.usage.rowsWritten, 0),
    d1RowsRead: d1Meters.reduce((n, m) => n + m.usage.rowsRead, 0),
  };
}

export function resetObjectUsage(): void {
  usage.storageRowsWritten = 0;
  usage.storageRowsRead = 0;
  usage.alarms = 0;
  for (const m of d1Meters) m.reset();
}

const keysOf = (arg: unknown): number =>
  Array.isArray(arg) ? arg.length : typeof arg === "object" && arg !== null ? Object.keys(arg).length : 1;

/** `storage` with each call counted. */
function meteredStorage(storage: DurableObjectStorage): DurableObjectStorage {
  return new Proxy(storage, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== "function") return value;
      const fn = value as (...a: unknown[]) => unknown;
      switch (prop) {
        case "put":
        case "delete":
          return (...a: unknown[]) => ((usage.storageRowsWritten += keysOf(a[0])), fn.apply(target, a));
        case "get":
          return (...a: unknown[]) => ((usage.storageRowsRead += keysOf(a[0])), fn.apply(target, a));
        case "setAlarm":
        case "deleteAlarm":
          return (...a: unknown[]) => ((usage.storageRowsWritten += 1), fn.apply(target, a));
        default:
          return fn.bind(target);
      }
    },
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- TypeScript's mixin rule: a constructor of any[]
type ObjectClass = new (...args: any[]) => { alarm?(info?: AlarmInvocationInfo): unknown };

/**
 * The class `base` with its storage, alarms and D1 metered.
 *
 * @example
 * export const Coordinator = metered(edgeq.Coordinator);
 */
export function metered<C extends ObjectClass>(base: C): C {
  const Metered = class extends base {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the mixin rule again
    constructor(...args: any[]) {
      const [ctx, env] = args as [DurableObjectState, Record<string, unknown>];
      const storage = meteredStorage(ctx.storage);
      const state = new Proxy(ctx, {
        get: (target, prop) => {
          if (prop === "storage") return storage;
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const meter = meteredD1(env.DB as D1Database);
      d1Meters.push(meter);
      usage.constructed += 1;
      super(ctx, { ...env, DB: meter.db } as never);
      // The runtime's base class takes only the real state; the metered one replaces it once constructed.
      Object.defineProperty(this, "ctx", { value: state, configurable: true });
    }
    override alarm(info?: AlarmInvocationInfo) {
      usage.alarms += 1;
      return super.alarm?.(info);
    }
  };
  return Metered as unknown as C;
}
