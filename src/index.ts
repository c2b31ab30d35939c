import { dashboard } from "./http/parts/dashboard";
import { reference } from "./http/parts/reference";
import { sqs } from "./http/parts/sqs";
import { REFERENCE_PROCESSORS } from "./plugins/reference";
import { createEdgeq, type Env } from "./app/index";

/** This repository's own deployment, built only on the package's public entry points (src/app/index.ts
 * is `edgeq`, src/plugins/reference.ts is `edgeq/plugins/reference`: every built-in processor and `echo`;
 * src/http/parts/ are `edgeq/dashboard`, `edgeq/sqs` and `edgeq/reference`, all served here);
 * `npm run lint:deps` refuses any other import here. */
const edgeq = createEdgeq({ processors: REFERENCE_PROCESSORS, dashboard, sqs, reference });

/** The Durable Object classes wrangler.toml binds, and the Workers RPC entrypoint other Workers bind. */
export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;

/** The Worker: the HTTPS API, and the cron tick. */
export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled } satisfies ExportedHandler<Env>;
