import type { Env } from "./env";
import { REFERENCE_PROCESSORS } from "./plugins/reference";
import { createEdgeq } from "./worker/create-edgeq";

/** This repository's own deployment: every built-in processor and the `echo` example. */
const edgeq = createEdgeq({ processors: REFERENCE_PROCESSORS });

/** The Durable Object classes wrangler.toml binds, and the Workers RPC entrypoint other Workers bind. */
export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;

/** The Worker: the HTTPS API, and the cron tick. */
export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled } satisfies ExportedHandler<Env>;
