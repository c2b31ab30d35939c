import type { Processor } from "../processors/types";
import { echoProcessor } from "./echo";
import { httpProcessor } from "./http/index";
import { calibrateProcessor, tagProcessor } from "./tag/index";
import { ttsProcessor } from "./tts/index";

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
