import { QueueCoordinator } from "./coordinator/coordinator";
import { runTick } from "./cron/tick";
import type { Env } from "./env";
import { buildApp } from "./http/app";
import { REFERENCE_PROCESSORS } from "./plugins/reference";
import { ProcessorRegistry } from "./processors/registry";

export { EventHub } from "./events/event-hub";
export { Scheduler } from "./schedules/scheduler";

/** The processors, built once here and handed to everything that needs them. */
const processors = new ProcessorRegistry(REFERENCE_PROCESSORS);

const app = buildApp({ processors });

/** The queue-partition coordinator, with this Worker's processors (wrangler.toml's class `Coordinator`). */
export class Coordinator extends QueueCoordinator {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { processors });
  }
}

/** The Worker: the HTTPS API, and the cron tick (awaited through waitUntil, never fire-and-forget). */
export default {
  fetch: app.fetch,
  scheduled(controller, env, ctx) {
    ctx.waitUntil(
      runTick(env, controller.scheduledTime).then((result) => {
        console.log("cron tick", JSON.stringify(result));
      }),
    );
  },
} satisfies ExportedHandler<Env>;
