import type { Client } from "./client";
import { DEFAULT_URL, type CliConfig } from "./config";

/**
 * What a command is and what it runs with: the types every command module and the dispatcher
 * (main.ts) share, kept here so no command imports the dispatcher that loads it.
 */

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
  /** The environment the command runs in (process.env for the `edgeq` binary). */
  env: NodeJS.ProcessEnv;
}

/** One flag of a command: how it parses, and what --help says about it. */
export interface FlagSpec {
  type: "string" | "boolean";
  short?: string;
  /** May be given more than once; the values come as a list. */
  multiple?: boolean;
  /** The value's name in --help (N, S, PATH, ISO…); string flags only. */
  value?: string;
  /** One line for --help. */
  description: string;
  /** The default as --help shows it; the command applies it. */
  default?: string;
}

export type FlagSpecs = Record<string, FlagSpec>;

/** A command: its flags, one line of help, its usage line, and what it does. */
export interface Command {
  summary: string;
  usage: string;
  options?: FlagSpecs;
  run(ctx: CommandContext): Promise<number | void>;
}

/** Flags every command takes, before or after the command's name. */
export const GLOBAL_FLAGS = {
  url: {
    type: "string",
    value: "URL",
    description: "the edgeq server (else EDGEQ_URL, else the config file's url)",
    default: DEFAULT_URL,
  },
  token: {
    type: "string",
    value: "TOKEN",
    description: "bearer token (else EDGEQ_TOKEN, else the config file's token)",
    default: "the development token",
  },
  help: { type: "boolean", short: "h", description: "show the command's usage and flags" },
} as const satisfies FlagSpecs;
