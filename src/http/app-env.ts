import type { Env } from "../env";
import type { Db } from "../db/client";
import type { OperationContext } from "../operations/context";

/** Hono's environment for every route: the Worker's bindings plus per-request variables. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    db: Db;
    /** The request's clock reading (ms), taken once so every write of one request agrees on time. */
    now: number;
    /** What operations run with (src/operations/): routes parse, make one call with it, and render. */
    op: OperationContext;
  };
}
