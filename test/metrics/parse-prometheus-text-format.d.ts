declare module "parse-prometheus-text-format" {
  /** Parses the Prometheus text format into metric families (prom2json's shape). */
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
