import { dashboardPages } from "../../dashboard/routes";
import type { HttpPart } from "../http-part";

/**
 * The dashboard (docs/dashboard.md), as `edgeq/dashboard`: a page at /dashboard that signs in with the
 * token and reads /v1, `/` redirecting to it. Pass it to createEdgeq to serve it.
 *
 * @example
 * import { createEdgeq } from "edgeq";
 * import { dashboard } from "edgeq/dashboard";
 * const edgeq = createEdgeq({ processors, dashboard });
 */
export const dashboard: HttpPart<"dashboard"> = {
  name: "dashboard",
  mount: (app) => void app.route("/", dashboardPages),
};
