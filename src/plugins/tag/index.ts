/** The `tag` plugin (edgeq/plugins/tag): `tag` (LLM or local keywords) and `calibrate` (per-group thresholds, in its own table). */
export { tagProcessor } from "./tag";
export { calibrateProcessor } from "./calibrate";
