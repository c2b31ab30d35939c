import { REFERENCE_PROCESSORS } from "./plugins/reference";
import { createEdgeq, type Env } from "./worker/index";

/** This repository's own deployment, built only on the package's public entry points (src/worker/index.ts
 * is `edgeq`, src/plugins/<name>/index.ts is `edgeq/plugins/<name>`): every built-in processor and `echo`. */
const edgeq = createEdgeq({ processors: REFERENCE_PROCESSORS });

/** The Durable Object classes wrangler.toml binds, and the Workers RPC entrypoint other Workers bind. */
export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;

/** The Worker: the HTTPS API, and the cron tick. */
export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled } satisfies ExportedHandler<Env>;
