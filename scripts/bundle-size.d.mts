/** A Worker bundle's size: its bytes, and its bytes gzipped (level 9). */
export interface BundleSize {
  bytes: number;
  gzip: number;
}
/** The core-only Worker's budget, gzipped, in bytes. */
export const CORE_GZIP_BUDGET: number;
/** The bundle of a Worker with these opt-in parts. */
export function measure(parts: ("dashboard" | "sqs" | "reference")[]): Promise<BundleSize>;
/** Every Worker measured, by name: "core", "core + dashboard", "core + sqs", "core + reference", "core + all three". */
export function measureAll(): Promise<Record<string, BundleSize>>;
