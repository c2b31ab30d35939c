/**
 * Formatting shared by the commands: aligned tables, relative times, progress bars, JSON output. Nothing
 * here talks to the API.
 */

/** The stream shape the helpers write to (process.stdout / process.stderr, or a test double). */
export interface Output {
  write(chunk: string): boolean;
  isTTY?: boolean;
  columns?: number;
}

/**
 * Lays rows out in columns separated by two spaces, padded to the widest cell; the last column is not
 * padded, so lines carry no trailing spaces.
 *
 * @example
 * table(["id", "state"], [["01J…", "pending"]]); // "id    state\n01J…  pending\n"
 */
export function table(headers: string[], rows: string[][]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((row) => [...(row[i] ?? "")].length)));
  const lines = all.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat((widths[i] ?? 0) - [...cell].length)))
      .join("  ")
      .trimEnd(),
  );
  return lines.join("\n") + "\n";
}

/** `key  value` lines with the keys aligned, for one record (show, config get). */
export function keyValues(pairs: Array<[string, string]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value}`.trimEnd()).join("\n") + "\n";
}

const UNITS: Array<[string, number]> = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1000],
];

/** A duration in its largest unit, e.g. 90_000 → "1m", 5_400_000 → "1h30m" (two units at most). */
export function shortDuration(ms: number): string {
  let rest = Math.abs(ms);
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    if (rest >= size || (unit === "s" && parts.length === 0)) {
      const n = Math.floor(rest / size);
      parts.push(`${n}${unit}`);
      rest -= n * size;
    }
    if (parts.length === 2) break;
  }
  return parts.join("");
}

/**
 * An ISO time relative to `now`: "12s ago", "3h20m ago", "in 5m", "now" (within a second); "-" for null.
 *
 * @example
 * relativeTime("2026-01-01T00:00:00Z", Date.parse("2026-01-01T00:01:30Z")); // "1m30s ago"
 */
export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "-";
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const delta = at - now;
  if (Math.abs(delta) < 1000) return "now";
  return delta < 0 ? `${shortDuration(delta)} ago` : `in ${shortDuration(delta)}`;
}

/** An ISO time with its relative form: "2026-01-01T00:00:00.000Z (3m ago)"; "-" for null. */
export function timeWithRelative(iso: string | null | undefined, now = Date.now()): string {
  return iso ? `${iso} (${relativeTime(iso, now)})` : "-";
}

/** A bar of `width` cells filled to `fraction` (clamped to 0..1): "[######------]". */
export function bar(fraction: number, width = 24): string {
  const f = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const filled = Math.round(f * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}

/** Cuts `text` to one line of at most `max` characters, ending in "…" when cut. */
export function truncate(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  const chars = [...line];
  return chars.length <= max ? line : chars.slice(0, Math.max(0, max - 1)).join("") + "…";
}

/**
 * One line on a terminal, rewritten in place (`\r` + clear to end of line). On anything else — a pipe, a
 * file, CI logs — nothing is redrawn: by default `update` writes nothing and `done` writes the final line
 * once, so logs get one line instead of hundreds of carriage returns; with `logChanges`, each new text is
 * written as a line of its own (for `watch`, whose updates are the point).
 */
export class StatusLine {
  private last = "";
  constructor(
    private readonly stream: Output,
    private readonly options: { logChanges?: boolean } = {},
  ) {}

  /** Whether the line is redrawn in place. */
  get live(): boolean {
    return this.stream.isTTY === true;
  }

  /** Shows `text` (cut to the terminal's width when redrawn in place). */
  update(text: string): void {
    if (!this.live) {
      if (this.options.logChanges && text !== this.last) this.stream.write(`${text}\n`);
      this.last = text;
      return;
    }
    const width = this.stream.columns || 80; // 0 when the terminal does not say
    // One physical line: a longer one would wrap, and `\r` would then redraw only its last part.
    const chars = [...text.replace(/\n/g, " ")];
    const max = Math.max(10, width - 1);
    const line = chars.length <= max ? chars.join("") : chars.slice(0, max - 1).join("") + "…";
    if (line === this.last) return;
    this.last = line;
    this.stream.write(`\r\x1b[K${line}`);
  }

  /** Ends the line: the final text stays (on a terminal) or is written once (elsewhere, unless empty). */
  done(text = ""): void {
    if (this.live) {
      this.stream.write(text ? `\r\x1b[K${text}\n` : this.last ? "\r\x1b[K" : "");
    } else if (text && !(this.options.logChanges && text === this.last)) {
      this.stream.write(`${text}\n`);
    }
    this.last = "";
  }
}

/**
 * A progress bar for `total` units of work on one line of `stream` (stderr, so stdout stays clean for
 * ids and JSON): "label [#####-----] 500/1000". It only animates on a terminal (see StatusLine).
 *
 * @example
 * const progress = new ProgressBar(process.stderr, 1000, "enqueue");
 * progress.tick(500);
 * progress.done();
 */
export class ProgressBar {
  private readonly line: StatusLine;
  private count = 0;
  constructor(
    stream: Output,
    private readonly total: number,
    private readonly label: string,
  ) {
    this.line = new StatusLine(stream);
    this.render();
  }

  /** Adds `n` finished units and redraws. */
  tick(n: number): void {
    this.count += n;
    this.render();
  }

  /** Clears the bar (on a terminal; elsewhere it never drew anything). */
  done(): void {
    this.line.done();
  }

  private render(): void {
    const fraction = this.total === 0 ? 1 : this.count / this.total;
    this.line.update(`${this.label} ${bar(fraction)} ${this.count}/${this.total}`);
  }
}

/** Writes values as JSON lines (one compact document per line), the format `--json` uses for lists. */
export function writeJsonLines(stream: Output, values: Iterable<unknown>): void {
  let text = "";
  for (const value of values) text += JSON.stringify(value) + "\n";
  if (text) stream.write(text);
}

/** Writes one value as indented JSON, the format `--json` uses for single documents. */
export function writeJson(stream: Output, value: unknown): void {
  stream.write(JSON.stringify(value, null, 2) + "\n");
}

/** `n` with a noun, pluralised with "s": plural(1, "task") → "1 task", plural(3, "task") → "3 tasks". */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
