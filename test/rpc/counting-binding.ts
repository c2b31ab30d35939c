import { exports } from "cloudflare:workers";
import type { EdgeqService } from "../../src/rpc/edgeq-entrypoint";

/** The Worker's own EdgeqRpc binding (a real RPC call through its loopback), counting the enqueue calls made
 * through it; `list` passes through uncounted. */
export function countingBinding() {
  const binding = exports.EdgeqRpc as unknown as EdgeqService;
  const counts = { enqueues: 0 };
  const counted = {
    enqueue: (...args: Parameters<EdgeqService["enqueue"]>) => {
      counts.enqueues += 1;
      return binding.enqueue(...args);
    },
    list: (...args: Parameters<EdgeqService["list"]>) => binding.list(...args),
  } as unknown as EdgeqService;
  return { binding: counted, counts, env: { EDGEQ: counted } };
}
