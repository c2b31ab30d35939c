import { readFileSync } from "node:fs";
import type { Command, FlagSpec, FlagSpecs } from "./command";

/** A flag as --help shows it: `-f, --file F` or `    --json`. */
function flagLabel(name: string, spec: FlagSpec): string {
  const short = spec.short ? `-${spec.short}, ` : "    ";
  const value = spec.type === "string" ? ` ${spec.value ?? "VALUE"}` : "";
  return `${short}--${name}${value}`;
}

/** One aligned line per flag: label, description, and the default when there is one. */
export function flagLines(flags: FlagSpecs): string[] {
  const entries = Object.entries(flags);
  const width = Math.max(...entries.map(([name, spec]) => flagLabel(name, spec).length));
  return entries.map(([name, spec]) => {
    const repeat = spec.multiple ? " (repeatable)" : "";
    const fallback = spec.default !== undefined ? ` (default: ${spec.default})` : "";
    return `  ${flagLabel(name, spec).padEnd(width)}  ${spec.description}${repeat}${fallback}`;
  });
}

/**
 * A command's --help: usage, summary, its flags with descriptions and defaults, then the global flags.
 *
 * @example
 * commandHelp(status, GLOBAL_FLAGS); // "usage: edgeq status [<queue>] …\n…\n\nflags:\n  --group G  …"
 */
export function commandHelp(command: Command, globals: FlagSpecs): string {
  const lines = [`usage: ${command.usage}`, command.summary];
  if (command.options && Object.keys(command.options).length > 0)
    lines.push("", "flags:", ...flagLines(command.options));
  lines.push("", "global flags (before or after the command):", ...flagLines(globals));
  return lines.join("\n") + "\n";
}

/**
 * The version of the package this CLI was built from: package.json next to the bundle's directory
 * (dist/edgeq.mjs, or cli/ when run from source).
 */
export function cliVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}
