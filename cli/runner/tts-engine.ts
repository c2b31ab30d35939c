import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CliError, EXIT } from "../errors";

/** The program name of a system espeak-ng (Debian/Ubuntu `espeak-ng`, Homebrew `espeak-ng`). */
const SYSTEM_ESPEAK = "espeak-ng";

/** The runner of the npm build, relative to the edgeq checkout (see cli/espeak-ng-wasm.mjs). */
const WASM_RUNNER = join("cli", "espeak-ng-wasm.mjs");

/** The `--version` probe at startup: a system espeak-ng answers at once; the WebAssembly build compiles
 * its 18 MB module first, about half a second here, so ten seconds only catches a hung program. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * The espeak-ng the tts engine runs: a system one when installed (native, faster), else the WebAssembly
 * build from npm, run by Node as a separate process (it is GPL-3.0; edgeq's bundle is MIT).
 */
export interface EspeakEngine {
  /** The program to spawn, and the arguments that come before espeak-ng's own. */
  command: string;
  prefix: string[];
  /** For the worker's start line, e.g. `espeak-ng 1.51 (system)`. */
  describe: string;
  /** How a person runs this same espeak-ng by hand, for messages (`espeak-ng --voices` lists voices). */
  commandLine: string;
}

/** The directory above `from` (or `from` itself) that holds cli/espeak-ng-wasm.mjs: the edgeq checkout,
 * whether this code runs as the bundle (dist/edgeq.mjs) or from source (cli/runner/). */
function findRunner(from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const runner = join(dir, WASM_RUNNER);
    if (existsSync(runner)) return runner;
    if (dirname(dir) === dir) return undefined;
  }
}

/** `espeak-ng --version`'s first words ("eSpeak NG text-to-speech: 1.51  Data at: …" gives "1.51"). */
function version(stdout: string): string {
  return /text-to-speech:\s*(\S+)/.exec(stdout)?.[1] ?? "unknown version";
}

function probe(command: string, prefix: string[]): { ok: true; version: string } | { ok: false; why: string } {
  const run = spawnSync(command, [...prefix, "--version"], { encoding: "utf8", timeout: PROBE_TIMEOUT_MS });
  if (!run.error && run.status === 0) return { ok: true, version: version(run.stdout) };
  if ((run.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT") return { ok: false, why: "not on PATH" };
  return { ok: false, why: `--version failed: ${run.error?.message ?? (run.stderr.trim() || `exit ${run.status}`)}` };
}

/** The engine found by the first successful {@link findEspeak}: the host's programs do not change while
 * a worker runs, and the probe of the WebAssembly build costs half a second. */
let found: EspeakEngine | undefined;

/**
 * Finds the espeak-ng to render with: `espeak-ng` on PATH if it runs, else the npm package `espeak-ng`
 * (installed with edgeq) through cli/espeak-ng-wasm.mjs. Throws a usage error when neither runs; the
 * first engine found is kept for the life of the process.
 *
 * @example
 * const engine = findEspeak(); // { command: "/usr/bin/node", prefix: [".../cli/espeak-ng-wasm.mjs"], ... }
 * spawn(engine.command, [...engine.prefix, "-v", "en", "-w", "out.wav", "--stdin"]);
 */
export function findEspeak(): EspeakEngine {
  return (found ??= locate());
}

function locate(): EspeakEngine {
  const system = probe(SYSTEM_ESPEAK, []);
  if (system.ok) {
    return {
      command: SYSTEM_ESPEAK,
      prefix: [],
      describe: `espeak-ng ${system.version} (system)`,
      commandLine: SYSTEM_ESPEAK,
    };
  }
  const runner = findRunner(dirname(fileURLToPath(import.meta.url)));
  let why = `the npm build could not be found (${WASM_RUNNER} is missing next to this edgeq)`;
  if (runner) {
    try {
      createRequire(runner).resolve("espeak-ng");
      const wasm = probe(process.execPath, [runner]);
      if (wasm.ok) {
        return {
          command: process.execPath,
          prefix: [runner],
          describe: `espeak-ng ${wasm.version} (WebAssembly build from npm)`,
          commandLine: `node ${runner}`,
        };
      }
      why = `the npm build did not run (${wasm.why})`;
    } catch {
      why = "the npm package espeak-ng is not installed (run npm install in the edgeq directory)";
    }
  }
  throw new CliError(
    `--engine tts renders with espeak-ng: it is not installed on this host (${system.why}) and ${why}; ` +
      "install it (Debian/Ubuntu: apt-get install espeak-ng, macOS: brew install espeak-ng)",
    EXIT.usage,
  );
}
