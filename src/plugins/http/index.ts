/** The `http` plugin (edgeq/plugins/http): signed webhooks with retries. */
export { httpProcessor } from "./http";
