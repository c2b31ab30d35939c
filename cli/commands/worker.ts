import { EXIT } from "../errors";
import type { Command } from "../main";
import { WorkerApi } from "../worker/api";
import { execHandler } from "../worker/exec-handler";
import { parseWorkerSettings, WORKER_FLAGS } from "../worker/options";
import { claimPidFile, releasePidFile } from "../worker/pid-file";
import { WorkerRunner } from "../worker/runner";
import { checkEspeak, ttsHandler } from "../worker/tts-handler";
import type { TaskHandler } from "../worker/types";

const USAGE =
  'edgeq worker <queue> (--exec "<command>" | --engine tts) [--concurrency N] [--batch N] [--visibility S] ' +
  "[--wait S] [--holder NAME] [--grace S] [--pid-file PATH] [--once]";

/**
 * `edgeq worker <queue>`: a pull worker. Leases batches with long polling, runs at most --concurrency
 * tasks at once, heart-beats each every visibility/3 seconds, and completes or fails it by its outcome.
 * SIGINT/SIGTERM stop leasing, give in-flight tasks --grace seconds, then hand back the rest (pending at
 * once, attempt not counted) and exit 0; a second signal hands back at once. docs/cli-worker.md has the
 * --exec contract (stdin, environment, exit codes) and the tts engine.
 *
 * @example
 * edgeq worker thumbnails --exec "./make-thumbnail.sh" --concurrency 8
 * edgeq worker speech --engine tts --once
 */
export const worker: Command = {
  summary: "Run a queue's tasks here: a command per task (--exec) or espeak-ng (--engine tts)",
  usage: USAGE,
  options: WORKER_FLAGS,
  async run(ctx) {
    const { options, handler: choice, pidFile } = parseWorkerSettings(ctx, worker);
    let handler: TaskHandler;
    if (choice.kind === "exec") {
      handler = execHandler(choice.command);
    } else {
      checkEspeak();
      handler = ttsHandler();
    }
    const log = (line: string) => ctx.stderr.write(`edgeq worker ${options.queue}: ${line}\n`);
    claimPidFile(pidFile);
    const runner = new WorkerRunner(new WorkerApi(ctx.client, ctx.config, options.queue), handler, options, log);
    const onSignal = (signal: NodeJS.Signals) => {
      log(`${signal}: ${stopping ? "handing back now" : "stopping"}`);
      stopping = true;
      runner.stop();
    };
    let stopping = false;
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    log(`started: ${handler.describe}, concurrency ${options.concurrency}, pid ${process.pid} (${pidFile})`);
    try {
      await runner.run();
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      releasePidFile(pidFile);
    }
    log(stopping ? "stopped" : "drained: nothing more is due");
    return EXIT.ok;
  },
};
