/** The `tts` plugin (edgeq/plugins/tts): Workers AI speech into R2, resuming from checkpoints. */
export { ttsProcessor } from "./tts";
