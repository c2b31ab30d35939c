import { isAbort } from "./dom";
import type { ApiError } from "./wire";

const TOKEN_KEY = "edgeq.token";

/** The API token, kept in this tab only (sessionStorage), never in a URL. */
export const token = (): string | null => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (value: string): void => sessionStorage.setItem(TOKEN_KEY, value);
export const forgetToken = (): void => sessionStorage.removeItem(TOKEN_KEY);

/** An API answer: the body typed by what the route documents, or its error. */
export type Answer<T> = { ok: true; status: number; body: T } | { ok: false; status: number; body: ApiError | null };

let onUnauthorized = (): void => {};

/** What to do when the API refuses the token (the token is forgotten first): the router shows sign-in. */
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

/**
 * Calls the API with the bearer token. `signal` aborts it (the page was left): the call then throws an
 * AbortError. Leave it out for an action that should finish even if the page is left (a cancel, a retry).
 * @example
 * const answer = await api<QueueStats>("GET", `/v1/queues/${q}/stats`, { signal: life.signal });
 */
export async function api<T>(
  method: string,
  path: string,
  options: { body?: unknown; signal?: AbortSignal } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token() ?? ""}` };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
  });
  let data: unknown = null; // stays null for a body that is not JSON (a proxy's error page): the status says enough
  try {
    data = await res.json();
  } catch (error) {
    if (isAbort(error)) throw error;
  }
  if (res.status === 401) {
    forgetToken();
    onUnauthorized();
  }
  return res.ok
    ? { ok: true, status: res.status, body: data as T }
    : { ok: false, status: res.status, body: data as ApiError | null };
}

/** "code: message" of an error answer, or its HTTP status. */
export function errorText(answer: Answer<unknown>): string {
  if (!answer.ok && answer.body?.error) return `${answer.body.error.code}: ${answer.body.error.message}`;
  return `HTTP ${answer.status}`;
}

/** The body of a successful answer; an error answer throws (its text goes to the notice). */
export function must<T>(answer: Answer<T>): T {
  if (!answer.ok) throw new Error(errorText(answer));
  return answer.body;
}
