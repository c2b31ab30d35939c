import { esc } from "./dom";
import type { ThroughputMinute } from "./wire";

type Measure = "enqueued" | "completed" | "failed";

/** The series the queue page charts, with their colours (the legend in queue-page.ts uses the same). */
export const THROUGHPUT_LINES: ReadonlyArray<{ measure: Measure; color: string }> = [
  { measure: "enqueued", color: "#13233a" },
  { measure: "completed", color: "#1b6e3a" },
  { measure: "failed", color: "#b3261e" },
];

/** One value per minute of the last `hours`, oldest first: zero for minutes without a counter row. */
export function series(minutes: ThroughputMinute[], hours: number, measure: Measure): number[] {
  const n = hours * 60;
  const out = new Array<number>(n).fill(0);
  const end = Math.floor(Date.now() / 60_000);
  for (const m of minutes) {
    const i = n - 1 - (end - Math.floor(Date.parse(m.minute) / 60_000));
    if (i >= 0 && i < n) out[i] = m[measure];
  }
  return out;
}

/** A small line chart (SVG) of `values`, labelled for screen readers. */
export function sparkline(values: number[], label: string, color: string): string {
  const max = Math.max(1, ...values);
  const points = values
    .map((v, i) => `${((i * 100) / Math.max(1, values.length - 1)).toFixed(1)},${(20 - (v * 18) / max).toFixed(1)}`)
    .join(" ");
  return `<svg viewBox="0 0 100 20" width="120" height="24" role="img" aria-label="${esc(label)}"><polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points}"/></svg>`;
}

/** The queue page's chart: one polyline per measure in a 600 × 160 box, and the scale's top. */
export function throughputChart(minutes: ThroughputMinute[], hours: number): { svg: string; max: number } {
  const lines = THROUGHPUT_LINES.map((line) => ({ ...line, values: series(minutes, hours, line.measure) }));
  const max = Math.max(1, ...lines.flatMap((line) => line.values));
  const svg = lines
    .map(({ measure, color, values }) => {
      const points = values
        .map((v, i) => `${((i * 600) / (values.length - 1)).toFixed(1)},${(155 - (v * 145) / max).toFixed(1)}`)
        .join(" ");
      return `<polyline fill="none" stroke-width="2" stroke="${color}" points="${points}"><title>${measure}</title></polyline>`;
    })
    .join("");
  return { svg, max };
}
