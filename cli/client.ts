import { hc } from "hono/client";
import type { EdgeqApp } from "../src/http/app";
import type { CliConfig } from "./config";
import { CliError, EXIT } from "./errors";

/**
 * The typed HTTPS client, derived from the Worker's Hono app type: a route or schema change in src/http
 * breaks the CLI's type check instead of its users. A 401 fails every call at once (exit 4), saying where
 * the token sent came from.
 *
 * @example
 * const api = createClient(config);
 * const res = await api.v1.queues[":queue"].stats.$get({ param: { queue: "emails" }, query: {} });
 */
export function createClient(config: CliConfig) {
  return hc<EdgeqApp>(config.url, {
    headers: { Authorization: `Bearer ${config.token}` },
    fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
      let response: Response;
      try {
        response = await fetch(input, init);
      } catch (error) {
        throw new CliError(
          `cannot reach ${config.url} (${(error as Error).cause ?? (error as Error).message}); is the server running? (EDGEQ_URL)`,
          EXIT.unreachable,
        );
      }
      if (response.status === 401) throw await unauthorized(response, config);
      return response;
    },
  });
}

export type Client = ReturnType<typeof createClient>;

/** The 401 as a CliError: the server's message, then which token was sent and where it came from. */
async function unauthorized(response: Response, config: CliConfig): Promise<CliError> {
  let message = "HTTP 401";
  try {
    message = ((await response.json()) as ErrorBody).error?.message ?? message;
  } catch {
    // not JSON: keep the status alone
  }
  const source = config.tokenSource ? ` (the token sent came from ${config.tokenSource})` : "";
  return new CliError(`unauthorized: ${message}${source}`, EXIT.auth, "unauthorized");
}

/** The API's error body. */
interface ErrorBody {
  error?: { code?: string; message?: string };
}

/**
 * Reads a response: the JSON body when it succeeded, otherwise a CliError carrying the API's code and
 * message (401 becomes the "bad token" exit code).
 */
export async function expectOk<T>(response: { ok: boolean; status: number; json(): Promise<T> }): Promise<T> {
  if (response.ok) return response.json();
  let body: ErrorBody = {};
  try {
    body = (await response.json()) as ErrorBody;
  } catch {
    // not JSON: keep the status alone
  }
  const code = body.error?.code ?? `http_${response.status}`;
  const message = body.error?.message ?? `HTTP ${response.status}`;
  throw new CliError(`${code}: ${message}`, response.status === 401 ? EXIT.auth : EXIT.api, code);
}
