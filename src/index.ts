import { buildApp } from "./http/app";
import { runTick } from "./cron/tick";
import type { Env } from "./env";

export { Coordinator } from "./coordinator/coordinator";

const app = buildApp();

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
