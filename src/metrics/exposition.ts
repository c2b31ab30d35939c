/**
 * A small writer of the Prometheus text exposition format (version 0.0.4): `# HELP` and `# TYPE` once per
 * metric family, then its samples. Label values are escaped as the format requires (backslash, double
 * quote, newline); metric and label names are fixed by the caller.
 */
export type Labels = Record<string, string>;

export type MetricType = "counter" | "gauge" | "histogram";

/** The content type of the exposition format Prometheus scrapes. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatLabels(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return "";
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/**
 * Collects metric families and renders them in order of first use.
 *
 * @example
 * const out = new Exposition();
 * out.family("edgeq_tasks", "gauge", "Live tasks by state").sample({ queue: "q", state: "pending" }, 3);
 * return new Response(out.render(), { headers: { "content-type": EXPOSITION_CONTENT_TYPE } });
 */
export class Exposition {
  private readonly lines: string[] = [];
  private readonly declared = new Set<string>();

  /** Declares a family (once; later calls reuse it) and returns a writer of its samples. */
  family(name: string, type: MetricType, help: string) {
    if (!this.declared.has(name)) {
      this.declared.add(name);
      this.lines.push(`# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${name} ${type}`);
    }
    return {
      sample: (labels: Labels, value: number, suffix = "") => {
        this.lines.push(`${name}${suffix}${formatLabels(labels)} ${formatValue(value)}`);
      },
    };
  }

  /** Writes one histogram: cumulative `_bucket`s with `le` (the last `+Inf`), `_sum` and `_count`.
   * `buckets` are non-cumulative counts per bound, the last one above every bound. */
  histogram(name: string, help: string, labels: Labels, bounds: readonly number[], buckets: number[], sum: number) {
    const family = this.family(name, "histogram", help);
    let cumulative = 0;
    bounds.forEach((bound, i) => {
      cumulative += buckets[i] ?? 0;
      family.sample({ ...labels, le: formatValue(bound) }, cumulative, "_bucket");
    });
    cumulative += buckets[bounds.length] ?? 0;
    family.sample({ ...labels, le: "+Inf" }, cumulative, "_bucket");
    family.sample(labels, sum, "_sum");
    family.sample(labels, cumulative, "_count");
  }

  render(): string {
    return this.lines.join("\n") + "\n";
  }
}
