import { parseCommandArgs, splitCommand } from "./argv";
import { createClient } from "./client";
import { resolveConfig } from "./config";
import { CliError, EXIT } from "./errors";
import { GLOBAL_FLAGS, type Command, type CommandContext } from "./command";
import { cliVersion, commandHelp, flagLines } from "./help";

/** Loaded lazily so `edgeq --help` stays instant. Names with a space are sub-commands. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  enqueue: () => import("./commands/enqueue").then((m) => m.enqueue),
  list: () => import("./commands/list").then((m) => m.list),
  show: () => import("./commands/show").then((m) => m.show),
  status: () => import("./commands/status").then((m) => m.status),
  health: () => import("./commands/health").then((m) => m.health),
  "schedule set": () => import("./commands/schedule").then((m) => m.scheduleSet),
  "schedule list": () => import("./commands/schedule").then((m) => m.scheduleList),
  "schedule show": () => import("./commands/schedule").then((m) => m.scheduleShow),
  "schedule rm": () => import("./commands/schedule").then((m) => m.scheduleRm),
  "schedule pause": () => import("./commands/schedule").then((m) => m.schedulePause),
  "schedule resume": () => import("./commands/schedule").then((m) => m.scheduleResume),
  "schedule trigger": () => import("./commands/schedule").then((m) => m.scheduleTrigger),
  watch: () => import("./commands/watch").then((m) => m.watch),
  cancel: () => import("./commands/cancel").then((m) => m.cancel),
  retry: () => import("./commands/retry").then((m) => m.retry),
  wait: () => import("./commands/wait").then((m) => m.wait),
  deps: () => import("./commands/deps").then((m) => m.deps),
  dependents: () => import("./commands/deps").then((m) => m.dependents),
  bulk: () => import("./commands/bulk").then((m) => m.bulk),
  purge: () => import("./commands/purge").then((m) => m.purge),
  pause: () => import("./commands/pause").then((m) => m.pause),
  resume: () => import("./commands/pause").then((m) => m.resume),
  move: () => import("./commands/move").then((m) => m.move),
  placement: () => import("./commands/move").then((m) => m.placement),
  "dlq list": () => import("./commands/dlq").then((m) => m.dlqList),
  "dlq redrive": () => import("./commands/dlq").then((m) => m.dlqRedrive),
  "config get": () => import("./commands/config").then((m) => m.configGet),
  "config set": () => import("./commands/config").then((m) => m.configSet),
  worker: () => import("./commands/worker").then((m) => m.worker),
  "worker stop": () => import("./commands/worker-stop").then((m) => m.workerStop),
  "migrations sync": () => import("./commands/migrations").then((m) => m.migrationsSync),
};

/** First words of the commands ("dlq" of "dlq list"). */
const COMMAND_WORDS = new Set(Object.keys(COMMANDS).map((name) => name.split(" ")[0]!));

async function help(stdout: CliIo["stdout"]): Promise<void> {
  const lines = ["usage: edgeq <command> [flags]   (edgeq <command> --help: its flags)", "", "commands:"];
  for (const [name, load] of Object.entries(COMMANDS)) {
    const command = await load();
    lines.push(`  ${name.padEnd(12)} ${command.summary}`);
  }
  const version = { type: "boolean", description: "print edgeq's version" } as const;
  lines.push("", "global flags (before or after the command):", ...flagLines({ ...GLOBAL_FLAGS, version }));
  stdout.write(lines.join("\n") + "\n");
}

/** The streams a run reads and writes: the process's own, or (in the cli tests) strings. */
export type CliIo = Pick<CommandContext, "stdout" | "stderr" | "stdin">;

/**
 * Runs the CLI with `argv` (without node and the script) and returns the exit code. Every failure is one
 * line on stderr: `edgeq: <what went wrong>`. A one-shot command reads and writes only `io` and `env`
 * (EDGEQ_URL, EDGEQ_TOKEN, EDGEQ_CONFIG, HOME), so it can run inside another process (the cli tests do);
 * `worker` and `watch` also listen for the process's signals, and `worker` and `worker stop` find their pid
 * file in the process's temporary directory (os.tmpdir()), so those run as the `edgeq` binary.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2));
 */
export async function main(
  argv: string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  try {
    const { name, args } = splitCommand(
      argv,
      (word) => COMMAND_WORDS.has(word),
      (first, second) => `${first} ${second}` in COMMANDS,
      (flag) => flag === "--url" || flag === "--token",
    );
    if (name === undefined || name === "help") {
      if (args.includes("--version") || args.includes("-V")) {
        io.stdout.write(`edgeq ${cliVersion()}\n`);
        return EXIT.ok;
      }
      await help(io.stdout);
      return name !== undefined || args.includes("--help") || args.includes("-h") ? EXIT.ok : EXIT.usage;
    }
    const load = COMMANDS[name];
    if (!load) throw new CliError(`unknown command "${name}" (edgeq --help lists them)`, EXIT.usage);
    const command = await load();
    let parsed;
    try {
      parsed = parseCommandArgs(args, { ...GLOBAL_FLAGS, ...command.options });
    } catch (error) {
      throw new CliError(`${(error as Error).message}\nusage: ${command.usage}`, EXIT.usage);
    }
    if (parsed.values.help) {
      io.stdout.write(commandHelp(command, GLOBAL_FLAGS));
      return EXIT.ok;
    }
    const config = resolveConfig(
      { url: parsed.values.url as string | undefined, token: parsed.values.token as string | undefined },
      env,
    );
    const code = await command.run({
      config,
      client: createClient(config),
      args: parsed.positionals,
      flags: parsed.values as CommandContext["flags"],
      env,
      ...io,
    });
    return code ?? EXIT.ok;
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`edgeq: ${error.message}\n`);
      return error.exitCode;
    }
    io.stderr.write(`edgeq: unexpected error: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT.api;
  }
}
