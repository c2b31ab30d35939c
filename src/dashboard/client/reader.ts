import { isAbort } from "./dom";
import type { PageLife } from "./page-life";

/**
 * One thing a page reads and paints (its table, its counts, its chart), read again as often as asked but
 * never two answers painting out of order:
 * - `read()` asks a new question (the first read, a filter, a page, a range): a read still under way is
 *   aborted, so its older answer cannot paint over this one.
 * - `refresh()` says something changed (an event, a timer): it reads now, or once more after the read
 *   under way — never aborting it, so a steady stream of events cannot starve the page of answers.
 * Every read gets a signal that also aborts when the page is left.
 *
 * @example
 * const table = new Reader(life, async (signal) => {
 *   const page = must(await api<TaskList>("GET", path, { signal }));
 *   life.find("tasks", signal).innerHTML = rows(page); // not reached once aborted
 * });
 * await table.read();
 * follow(life, events, { onEvent: () => table.refresh() });
 */
export class Reader {
  readonly #life: PageLife;
  readonly #load: (signal: AbortSignal) => Promise<void>;
  /** The read under way, if any. */
  #current: AbortController | null = null;
  /** A refresh was asked while a read was under way: one more read follows it. */
  #again = false;

  constructor(life: PageLife, load: (signal: AbortSignal) => Promise<void>) {
    this.#life = life;
    this.#load = load;
  }

  /** Reads now, aborting a read under way. Resolves once painted, or once a newer read took over (which
   * paints instead); rejects with the read's error, or an AbortError once the page is left. */
  read(): Promise<void> {
    this.#current?.abort();
    return this.#start();
  }

  /** Reads now, or once more after the read under way; its error goes to the page's notice. */
  refresh(): void {
    if (this.#current) this.#again = true;
    else this.#life.run(() => this.#start());
  }

  async #start(): Promise<void> {
    const read = new AbortController();
    this.#current = read;
    this.#again = false;
    const forget = this.#life.onEnd(() => read.abort());
    try {
      await this.#load(read.signal);
    } catch (error) {
      // Superseded by a newer read, on a page still shown: that one paints; this one ends quietly.
      const superseded = isAbort(error) && this.#current !== read && !this.#life.ended;
      if (!superseded) throw error;
    } finally {
      forget();
      if (this.#current === read) {
        this.#current = null;
        if (this.#again && !this.#life.ended) this.#life.run(() => this.#start());
      }
    }
  }
}
