import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { DEV_TOKEN } from "../src/contracts/limits";
import { CliError, EXIT } from "./errors";

/** Where `npm start` serves (README quick start). */
export const DEFAULT_URL = "http://127.0.0.1:8787";

export interface CliConfig {
  url: string;
  token: string;
  /** Where the token came from, for messages (a 401 names it): "the --token flag", "EDGEQ_TOKEN", … */
  tokenSource?: string;
}

/**
 * Resolves the server URL and token: flags (--url, --token) over the environment (EDGEQ_URL, EDGEQ_TOKEN)
 * over the config file (EDGEQ_CONFIG, default ~/.config/edgeq/config.json: `{ "url", "token" }`, ~ being
 * `env.HOME`, else the user's home directory) over the local development defaults. Records where the token came from.
 *
 * @example
 * const config = resolveConfig({ url: flags.url, token: flags.token }, process.env);
 */
export function resolveConfig(flags: Partial<CliConfig>, env: NodeJS.ProcessEnv): CliConfig {
  const path = env.EDGEQ_CONFIG ?? join(env.HOME || homedir(), ".config", "edgeq", "config.json");
  let file: Partial<CliConfig> = {};
  try {
    file = JSON.parse(readFileSync(path, "utf8")) as Partial<CliConfig>;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    if (!missing || env.EDGEQ_CONFIG) {
      throw new CliError(`config file ${path}: ${(error as Error).message}`, EXIT.usage);
    }
  }
  const url = (flags.url ?? env.EDGEQ_URL ?? file.url ?? DEFAULT_URL).replace(/\/+$/, "");
  try {
    new URL(url);
  } catch {
    throw new CliError(`not a URL: ${url} (--url or EDGEQ_URL)`, EXIT.usage);
  }
  const [token, tokenSource] =
    flags.token !== undefined
      ? [flags.token, "the --token flag"]
      : env.EDGEQ_TOKEN !== undefined
        ? [env.EDGEQ_TOKEN, "EDGEQ_TOKEN"]
        : file.token !== undefined
          ? [file.token, `the config file ${path}`]
          : [DEV_TOKEN, `the development default ${DEV_TOKEN} (no --token, EDGEQ_TOKEN or config file token)`];
  return { url, token, tokenSource };
}
