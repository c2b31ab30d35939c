/**
 * Collects a stream's bytes up to `limit`, then keeps only the last `limit` bytes: a child process that
 * prints gigabytes costs the worker `limit` bytes of memory, and the end (where errors are) survives.
 *
 * @example
 * const out = new TailBuffer(2048);
 * child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
 * out.text(); // the last 2 KiB, decoded
 */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  /** True once bytes were dropped from the front. */
  truncated = false;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.limit) {
      const first = this.chunks[0]!;
      const excess = this.size - this.limit;
      this.truncated = true;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
  }

  /** The bytes kept, as UTF-8 (a character cut at the front decodes as U+FFFD). */
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/** The last `max` characters of `text`, marked with a leading "…" when cut. */
export function tail(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}
