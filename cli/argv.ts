import { parseArgs } from "node:util";
import type { FlagSpecs } from "./command";

/** A negative number given as a flag's value (`--priority -5`, `--x -1.5`). */
const NEGATIVE_NUMBER = /^-(\d+(\.\d*)?|\.\d+)$/;

/**
 * Splits a command line into the command's name and its arguments. Flags may come before the command as
 * well as after it (`edgeq --url U status` is `edgeq status --url U`): tokens before the first command word
 * must be flags, or the value following a flag. `isPair` names the two-word commands ("dlq list");
 * `takesValue` the global flags that take a value (so `--url U` without a command is no command "U").
 *
 * @example
 * splitCommand(["--json", "status", "q"], (w) => w === "status", () => false, (f) => f === "--url");
 * // { name: "status", args: ["--json", "q"] }
 */
export function splitCommand(
  argv: string[],
  isCommand: (word: string) => boolean,
  isPair: (first: string, second: string) => boolean,
  takesValue: (flag: string) => boolean,
): { name: string | undefined; args: string[] } {
  let i = 0;
  while (i < argv.length && !isCommand(argv[i]!)) {
    const token = argv[i]!;
    const afterFlag = i > 0 && /^--?[^=]+$/.test(argv[i - 1]!);
    if (!token.startsWith("-") && !afterFlag) break;
    i += 1;
  }
  if (i === argv.length) {
    // No command word: the first word that is neither a flag nor a global flag's value is an unknown
    // command (or there is none: `edgeq --version`).
    const word = argv.findIndex((token, j) => !token.startsWith("-") && !(j > 0 && takesValue(argv[j - 1]!)));
    return word < 0 ? { name: undefined, args: argv } : { name: argv[word], args: argv.filter((_, j) => j !== word) };
  }
  const first = argv[i]!;
  if (!isCommand(first)) return { name: first, args: argv.filter((_, j) => j !== i) };
  const second = argv[i + 1];
  const name = second !== undefined && isPair(first, second) ? `${first} ${second}` : first;
  const words = name.split(" ").length;
  return { name, args: [...argv.slice(0, i), ...argv.slice(i + words)] };
}

/**
 * Parses a command's arguments against its flags (strict: an unknown flag is an error). A negative number
 * after a flag that takes a value is that value (`--priority -5`), not a flag.
 *
 * @example
 * parseCommandArgs(["q", "--priority", "-5"], { priority: { type: "string", description: "…" } });
 * // { values: { priority: "-5" }, positionals: ["q"] }
 */
export function parseCommandArgs(args: string[], flags: FlagSpecs) {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!;
    const next = args[i + 1];
    const name = token.startsWith("--") ? token.slice(2) : undefined;
    if (name !== undefined && flags[name]?.type === "string" && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      joined.push(`${token}=${next}`);
      i += 1;
    } else {
      joined.push(token);
    }
  }
  const options = Object.fromEntries(
    Object.entries(flags).map(([name, spec]) => [
      name,
      { type: spec.type, ...(spec.short ? { short: spec.short } : {}), ...(spec.multiple ? { multiple: true } : {}) },
    ]),
  );
  try {
    return parseArgs({ args: joined, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new Error(plainParseError(error as Error & { code?: string }), { cause: error });
  }
}

/** node:util's parse errors, said plainly with the flag they are about. */
function plainParseError(error: Error & { code?: string }): string {
  const flag = /'(-{1,2}[^' ]+)/.exec(error.message)?.[1] ?? "";
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${flag}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      if (/argument is ambiguous/.test(error.message)) {
        return `${flag} needs a value (for a value starting with "-", write ${flag}=VALUE)`;
      }
      if (/does not take an argument/.test(error.message)) return `${flag} takes no value`;
      return `${flag} needs a value`;
    default:
      return error.message;
  }
}
