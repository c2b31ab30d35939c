import { parseArgs, type ParseArgsConfig } from "node:util";
import { createClient, type Client } from "./client";
import { resolveConfig, type CliConfig } from "./config";
import { CliError, EXIT } from "./errors";

/** What every command receives. */
export interface CommandContext {
  config: CliConfig;
  client: Client;
  /** Positional arguments after the command (and sub-command) name. */
  args: string[];
  /** Parsed flags (per the command's `options`). */
  flags: Record<string, string | boolean | string[] | undefined>;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
}

/** A command: its flags (node:util parseArgs options), one line of help, and what it does. */
export interface Command {
  summary: string;
  usage: string;
  options?: ParseArgsConfig["options"];
  run(ctx: CommandContext): Promise<number | void>;
}

/** Flags every command takes. */
const GLOBAL_OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** Loaded lazily so `edgeq --help` stays instant. Names with a space are sub-commands. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  enqueue: () => import("./commands/enqueue").then((m) => m.enqueue),
  list: () => import("./commands/list").then((m) => m.list),
  show: () => import("./commands/show").then((m) => m.show),
  status: () => import("./commands/status").then((m) => m.status),
  watch: () => import("./commands/watch").then((m) => m.watch),
  cancel: () => import("./commands/cancel").then((m) => m.cancel),
  retry: () => import("./commands/retry").then((m) => m.retry),
  purge: () => import("./commands/purge").then((m) => m.purge),
  "dlq list": () => import("./commands/dlq").then((m) => m.dlqList),
  "dlq redrive": () => import("./commands/dlq").then((m) => m.dlqRedrive),
  "config get": () => import("./commands/config").then((m) => m.configGet),
  "config set": () => import("./commands/config").then((m) => m.configSet),
  worker: () => import("./commands/worker").then((m) => m.worker),
  "worker stop": () => import("./commands/worker-stop").then((m) => m.workerStop),
};

async function help(stdout: NodeJS.WriteStream): Promise<void> {
  const lines = ["usage: edgeq <command> [options]   (--url, --token, or EDGEQ_URL / EDGEQ_TOKEN)", ""];
  for (const [name, load] of Object.entries(COMMANDS)) {
    const command = await load();
    lines.push(`  ${name.padEnd(12)} ${command.summary}`);
  }
  stdout.write(lines.join("\n") + "\n");
}

/**
 * Runs the CLI with `argv` (without node and the script) and returns the exit code. Every failure is one
 * line on stderr: `edgeq: <what went wrong>`.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2));
 */
export async function main(
  argv: string[],
  io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
): Promise<number> {
  try {
    const [first, second] = argv;
    if (!first || first === "--help" || first === "-h" || first === "help") {
      await help(io.stdout);
      return first ? EXIT.ok : EXIT.usage;
    }
    const pair = second ? `${first} ${second}` : "";
    const name = pair in COMMANDS ? pair : first;
    const load = COMMANDS[name];
    if (!load) throw new CliError(`unknown command "${first}" (edgeq --help lists them)`, EXIT.usage);
    const command = await load();
    const rest = argv.slice(name.split(" ").length);
    let parsed;
    try {
      parsed = parseArgs({
        args: rest,
        options: { ...GLOBAL_OPTIONS, ...command.options },
        allowPositionals: true,
        strict: true,
      });
    } catch (error) {
      throw new CliError(`${(error as Error).message}\nusage: ${command.usage}`, EXIT.usage);
    }
    if (parsed.values.help) {
      io.stdout.write(`usage: ${command.usage}\n${command.summary}\n`);
      return EXIT.ok;
    }
    const config = resolveConfig(
      { url: parsed.values.url as string | undefined, token: parsed.values.token as string | undefined },
      process.env,
    );
    const code = await command.run({
      config,
      client: createClient(config),
      args: parsed.positionals,
      flags: parsed.values as CommandContext["flags"],
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
