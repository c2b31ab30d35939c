import { isAbort, say } from "./dom";

/** How often a page may re-read a list on a timer: the dashboard's promise (docs/dashboard.md) is that
 * nothing polls faster than every 10 s; changes in between come over the events socket. */
export const REFRESH_MS = 10_000;

/**
 * One render of one page, from the moment the router shows it until the page is left: the element it
 * paints into, and everything it started (API calls, timers, sockets), all ended by `end()`.
 *
 * A left page paints nothing: its element is out of the document, its API calls are aborted (their
 * awaits throw an AbortError, which `run` drops), its timers and sockets are gone, and `find`/`paint`
 * throw instead of painting.
 *
 * @example
 * const stats = must(await api<QueueStats>("GET", path, { signal: life.signal }));
 * life.find("counts").innerHTML = counts(stats); // never reached once the page is left
 */
export class PageLife {
  /** This render's own element, the only place it paints; the router puts it in #view. */
  readonly root: HTMLElement = document.createElement("div");
  readonly #controller = new AbortController();
  readonly #cleanups = new Set<() => void>();

  /** Aborted when the page is left. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get ended(): boolean {
    return this.signal.aborted;
  }

  /** Throws an AbortError once the page is left or `signal` (a Reader's read) is aborted. */
  check(signal?: AbortSignal): void {
    this.signal.throwIfAborted();
    signal?.throwIfAborted();
  }

  /** Replaces the whole page. */
  paint(html: string, signal?: AbortSignal): void {
    this.check(signal);
    this.root.innerHTML = html;
  }

  /** This page's element with `id`; throws (nothing paints) once the page is left or `signal` aborted. */
  find<T extends HTMLElement = HTMLElement>(id: string, signal?: AbortSignal): T {
    this.check(signal);
    const el = this.root.querySelector<T>(`#${CSS.escape(id)}`);
    if (!el) throw new Error(`the page has no #${id}`);
    return el;
  }

  /** This page's element with `id` if it has one (a row that may not be there yet). */
  query<T extends HTMLElement = HTMLElement>(id: string): T | null {
    return this.ended ? null : this.root.querySelector<T>(`#${CSS.escape(id)}`);
  }

  /** Shows a notice, unless the page was left (the notice belongs to the page shown). */
  say(text: string, isError = false): void {
    if (!this.ended) say(text, isError);
  }

  /**
   * Starts `work` of this page (a load, a re-read after an event, a click's action) without waiting for
   * it. Its error is shown in the notice — unless it is an abort (the page was left, or a newer read of
   * the same thing took over), which is how a left page's work ends.
   */
  run(work: () => Promise<unknown>): void {
    work().catch((error: unknown) => {
      if (isAbort(error) || this.ended) return;
      say(error instanceof Error ? error.message : String(error), true);
    });
  }

  /** Calls `tick` every `ms` (REFRESH_MS at least) while the page is shown. */
  every(ms: number, tick: () => void): void {
    const timer = setInterval(tick, Math.max(ms, REFRESH_MS));
    this.onEnd(() => clearInterval(timer));
  }

  /** Runs `work` once after `ms`, unless the page is left first. */
  later(ms: number, work: () => Promise<unknown>): void {
    const timer = setTimeout(() => {
      forget();
      this.run(work);
    }, ms);
    const forget = this.onEnd(() => clearTimeout(timer));
  }

  /** Calls `cleanup` when the page is left (at once if it was); returns a function that forgets it. */
  onEnd(cleanup: () => void): () => void {
    if (this.ended) {
      cleanup();
      return () => {};
    }
    this.#cleanups.add(cleanup);
    return () => this.#cleanups.delete(cleanup);
  }

  /** The page is left: aborts its calls, stops its timers and sockets. */
  end(): void {
    if (this.ended) return;
    this.#controller.abort();
    for (const cleanup of this.#cleanups) cleanup();
    this.#cleanups.clear();
  }
}
