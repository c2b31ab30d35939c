/** The page's own elements (src/dashboard/page.ts), outside any one view. */
function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the dashboard page has no #${id}`);
  return el as T;
}

export const viewElement = (): HTMLElement => byId("view");
export const signOutButton = (): HTMLButtonElement => byId("signout");

/**
 * Text made safe for HTML, in text and in quoted attributes.
 * @example
 * `<td>${esc(task.type)}</td>`
 */
export function esc(value: unknown): string {
  const text = value === null || value === undefined ? "" : String(value);
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Shows `text` in the notice line: a status, or an alert when `isError`. Empty clears it. */
export function say(text: string, isError = false): void {
  const notice = byId("notice");
  notice.textContent = text;
  notice.className = isError ? "error" : "";
  notice.setAttribute("role", isError ? "alert" : "status");
}

/** The events socket is open (tests wait on `body[data-live]`). */
export function markLive(live: boolean): void {
  if (live) document.body.setAttribute("data-live", "yes");
  else document.body.removeAttribute("data-live");
}

/** An aborted fetch or a `signal.throwIfAborted()`: work of a page that was left, or of a load that a newer
 * one of the same kind replaced. Not an error to show. */
export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === "AbortError";
}
