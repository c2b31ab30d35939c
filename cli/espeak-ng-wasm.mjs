// `node cli/espeak-ng-wasm.mjs <espeak-ng arguments>`: the espeak-ng command for hosts without Debian's
// (or Homebrew's) espeak-ng, from the npm package `espeak-ng` (espeak-ng compiled to WebAssembly).
//
// That package is GPL-3.0-or-later, while edgeq and its bundle (dist/edgeq.mjs) are MIT, so the two never
// share a process: this file is the only one that loads it, and `edgeq worker --engine tts` runs it as a
// program of its own (cli/runner/tts-engine.ts), exactly as it runs a system espeak-ng.
//
// It takes the arguments the CLI uses (`-v <voice> -w <file> --stdin`, `--voices[=…]`, `--version`): the
// WebAssembly build writes into its own in-memory file system, so `-w <file>` is rendered to a memory file
// and copied to the real <file> afterwards. Its exit status is espeak-ng's.
import { writeFileSync } from "node:fs";
import process from "node:process";
import ESpeakNg from "espeak-ng";

/** Where the WebAssembly build writes the WAV inside its in-memory file system. */
const MEMORY_WAV = "/edgeq-output.wav";

/** Emscripten's note when the program calls exit() itself: about the runtime, not espeak-ng, so dropped. */
const RUNTIME_NOTE = /^program exited \(with status: \d+\), but keepRuntimeAlive\(\) is set/;

const args = process.argv.slice(2);
const wavAt = args.indexOf("-w");
const wavFile = wavAt >= 0 ? args[wavAt + 1] : undefined;
if (wavAt >= 0 && wavFile === undefined) {
  process.stderr.write("espeak-ng-wasm: -w needs a file name\n");
  process.exit(1);
}
const wasmArgs = wavFile === undefined ? args : args.map((arg, i) => (i === wavAt + 1 ? MEMORY_WAV : arg));

let espeak;
try {
  espeak = await ESpeakNg({
    arguments: wasmArgs,
    print: (line) => process.stdout.write(`${line}\n`),
    printErr: (line) => {
      if (!RUNTIME_NOTE.test(line)) process.stderr.write(`${line}\n`);
    },
  });
} catch (error) {
  // Emscripten rejects its start-up promise when espeak-ng calls exit() (status set below); anything
  // else is a real failure to start.
  if (process.exitCode === undefined || process.exitCode === 0) {
    if (!(typeof error === "string" && RUNTIME_NOTE.test(error))) {
      process.stderr.write(`espeak-ng-wasm: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  }
}
// Emscripten sets process.exitCode to espeak-ng's exit status (it is unset when main simply returned).
if (espeak && wavFile !== undefined && !process.exitCode) {
  try {
    writeFileSync(wavFile, espeak.FS.readFile(MEMORY_WAV));
  } catch (error) {
    process.stderr.write(`espeak-ng-wasm: no audio was written: ${error.message}\n`);
    process.exitCode = 1;
  }
}
