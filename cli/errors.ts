/**
 * Exit codes, documented in the README: scripts can tell a bad token from a network failure.
 */
export const EXIT = {
  ok: 0,
  /** The API refused the request (4xx/5xx other than 401), e.g. lease_lost or invalid_request. */
  api: 1,
  /** Bad command line: unknown command or flag, missing argument. */
  usage: 2,
  /** The server could not be reached. */
  unreachable: 3,
  /** 401: missing or wrong token. */
  auth: 4,
  /** Bad input file: invalid JSON on a line of a JSONL file. */
  input: 5,
} as const;

/** An error the CLI reports as one line on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly exitCode: number = EXIT.api,
    readonly code?: string,
  ) {
    super(message);
  }
}
