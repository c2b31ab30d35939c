import { EdgeqClient, EdgeqError, Worker } from "../../src/node/index";
import type { RunTimeout } from "../../src/node/types";
import { expectOk } from "../client";
import type { CliConfig } from "../config";
import { CliError, EXIT } from "../errors";
import type { Command, CommandContext } from "../command";
import { execHandler } from "../runner/exec-handler";
import { parseWorkerSettings, WORKER_FLAGS } from "../runner/options";
import { sdkHandler } from "../runner/outcome-handler";
import { watchParent } from "../runner/parent-watch";
import { claimPidFile, releasePidFile } from "../runner/pid-file";
import { checkEspeak, ttsHandler } from "../runner/tts-handler";
import type { TaskHandler } from "../runner/types";

const USAGE =
  'edgeq worker <queue> (--exec "<command>" | --engine tts) [--concurrency N] [--batch N] [--visibility S] ' +
  "[--wait S] [--timeout S] [--holder NAME] [--grace S] [--pid-file PATH] [--once] [--no-session] [--outlive-parent]";

/** The queue's max_run_s as the per-task limit (null when it sets none); also checks URL, token and queue. */
async function queueTimeout(ctx: CommandContext, queue: string): Promise<RunTimeout | null> {
  const config = await expectOk(await ctx.client.v1.queues[":queue"].config.$get({ param: { queue } }));
  return config.max_run_s == null ? null : { seconds: config.max_run_s, source: "the queue's max_run_s" };
}

/**
 * `edgeq worker <queue>`: a pull worker. Leases batches with long polling, runs at most --concurrency
 * tasks at once, heart-beats each every visibility/3 seconds, and completes or fails it by its outcome. A
 * task running past --timeout (else the queue's max_run_s, read at start) is killed and failed for a
 * retry. SIGINT/SIGTERM — or the exit of the process that started the worker (e.g. `npx`, which does not
 * pass signals on) — stop leasing, give in-flight tasks --grace seconds, then hand back the rest (pending
 * at once, attempt not counted) and exit 0; a second signal hands back at once. docs/cli.md has the --exec
 * contract (stdin, environment, exit codes) and the tts engine.
 *
 * @example
 * edgeq worker thumbnails --exec "./make-thumbnail.sh" --concurrency 8 --timeout 10m
 * edgeq worker speech --engine tts --once
 */
export const worker: Command = {
  summary: "Run a queue's tasks here: a command per task (--exec) or espeak-ng (--engine tts)",
  usage: USAGE,
  options: WORKER_FLAGS,
  async run(ctx) {
    const { options, handler: choice, pidFile, outliveParent, session } = parseWorkerSettings(ctx, worker);
    let handler: TaskHandler;
    if (choice.kind === "exec") {
      handler = execHandler(choice.command, ctx.env);
    } else {
      checkEspeak();
      handler = ttsHandler();
    }
    options.timeout ??= await queueTimeout(ctx, options.queue);
    const log = (line: string) => ctx.stderr.write(`edgeq worker ${options.queue}: ${line}\n`);
    // A log nobody reads any more (the launcher and its pipe gone, e.g. `npx edgeq worker … | tee`) must not
    // crash the worker with EPIPE while it stops and hands its tasks back.
    ctx.stderr.on("error", () => {});
    claimPidFile(pidFile);
    const sdkWorker = new Worker(options.queue, sdkHandler(handler), {
      client: new EdgeqClient({ url: ctx.config.url, token: ctx.config.token }),
      concurrency: options.concurrency,
      batch: options.batch,
      visibilityS: options.visibilityS,
      waitS: options.waitS,
      graceS: options.graceS,
      holder: options.holder,
      once: options.once,
      timeoutS: options.timeout?.seconds ?? null,
      timeoutSource: options.timeout?.source,
      // Signals are this command's: it logs them and also stops when its parent process is gone.
      handleSignals: false,
      // The SDK's worker session where Node has a WebSocket (its timeout the visibility's), unless --no-session.
      ...(session ? {} : { session: false }),
    });
    sdkWorker.on("log", log);
    let stopping = false;
    const stop = (why: string) => {
      log(`${why}: ${stopping ? "handing back now" : "stopping"}`);
      stopping = true;
      void sdkWorker.close();
    };
    const onSignal = (signal: NodeJS.Signals) => stop(signal);
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    const unwatch = outliveParent
      ? () => {}
      : watchParent((pid) => stop(`the process that started this worker (pid ${pid}) has exited`));
    const limit = options.timeout ? `, time limit ${options.timeout.seconds}s (${options.timeout.source})` : "";
    log(`started: ${handler.describe}, concurrency ${options.concurrency}${limit}, pid ${process.pid} (${pidFile})`);
    try {
      await sdkWorker.run().catch((error: unknown) => {
        throw error instanceof EdgeqError ? cliErrorOf(error, ctx.config) : error;
      });
    } finally {
      unwatch();
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      releasePidFile(pidFile);
    }
    log(stopping ? "stopped" : "drained: nothing more is due");
    return EXIT.ok;
  },
};

/** An SDK error as the CLI reports it: the exit code says unreachable, bad token or refused. */
function cliErrorOf(error: EdgeqError, config: CliConfig): CliError {
  if (error.code === "unreachable" || error.code === "timeout") {
    return new CliError(`${error.message}; is the server running? (EDGEQ_URL)`, EXIT.unreachable);
  }
  if (error.status === 401) {
    const source = config.tokenSource ? ` (the token sent came from ${config.tokenSource})` : "";
    return new CliError(`unauthorized: ${error.message}${source}`, EXIT.auth, "unauthorized");
  }
  return new CliError(`${error.code}: ${error.message}`, EXIT.api, error.code);
}
