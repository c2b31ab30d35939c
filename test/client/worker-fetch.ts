import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { REFERENCE_PROCESSORS } from "../../src/plugins/reference";
import { createEdgeq } from "../../src/app/index";
import { meteredEnv } from "../support/metered-env";

/** This repository's Worker (src/index.ts) with every D1 database metered. */
const edgeq = createEdgeq({ processors: REFERENCE_PROCESSORS });

/**
 * A fetch to the real Worker that counts the requests it sends and the D1 rows they write (GETs unmetered: they
 * read through sessions) (their
 * waitUntil work included), and can be told to fail the next requests in the network (`failNext`).
 *
 * @example
 * const worker = workerFetch();
 * const client = new EdgeqClient({ url: "http://edgeq.test", token: "test-token", fetch: worker.fetch });
 */
export function workerFetch() {
  const metered = meteredEnv(env);
  const counts = { requests: 0, failNext: 0 };
  const fetch: typeof globalThis.fetch = async (input, init) => {
    counts.requests += 1;
    if (counts.failNext > 0) {
      counts.failNext -= 1;
      throw new TypeError("fetch failed");
    }
    const ctx = createExecutionContext();
    const request = new Request(input, init);
    // Reads go through D1 sessions, which the meter does not wrap; they write nothing.
    const response = await edgeq.fetch(request, request.method === "GET" ? env : metered.env, ctx);
    await waitOnExecutionContext(ctx);
    return response;
  };
  return {
    fetch,
    counts,
    rowsWritten: () => metered.usage().rowsWritten,
    reset: () => ((counts.requests = 0), metered.reset()),
  };
}
