import { echoProcessor } from "./echo";
import { httpProcessor } from "./http/http";
import { calibrateProcessor } from "./tag/calibrate";
import { tagProcessor } from "./tag/tag";
import { ttsProcessor } from "./tts/tts";
import type { Processor } from "../processors/types";

/**
 * The processors this repository's own deployment (src/index.ts) runs: every built-in plugin, and `echo`,
 * the smallest example. A Worker of your own lists the ones it wants instead.
 */
export const REFERENCE_PROCESSORS: Processor[] = [
  httpProcessor,
  ttsProcessor,
  tagProcessor,
  calibrateProcessor,
  echoProcessor,
];
