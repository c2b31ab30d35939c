/** How to start the local edgeq server (`wrangler dev --env local`). */
export interface WranglerDevOptions {
  /** The edgeq checkout: wrangler.toml, migrations/ and node_modules/.bin/wrangler are read from here. */
  root: string;
  /** The server's EDGEQ_TOKEN. */
  token: string;
  /** The server's SQS_CREDENTIALS ("AKID:secret" pairs, comma-separated). Without it the SQS endpoint takes
   * the published development pair only while `token` is the development token (src/sqs/credentials.ts). */
  sqsCredentials?: string;
  /** The Worker's entry module, in place of wrangler.toml's `main` (e.g. the bench's bench/timed-worker.ts). */
  main?: string;
  /** Port on 127.0.0.1 (default: a free one). */
  port?: number;
  /** Where local D1, R2 and Durable Object state lives (default: wrangler's, .wrangler/state). */
  persistTo?: string;
  /** false: `persistTo` already holds every migration (a copy of a migrated state: test/cli/migrated-state.ts),
   * so none is applied. Default true. */
  migrate?: boolean;
  /** wrangler's --log-level (default: wrangler's own). */
  logLevel?: "debug" | "info" | "log" | "warn" | "error" | "none";
  /** More arguments for `wrangler dev`. */
  extraArgs?: string[];
  /** Receives wrangler's output as it comes (the migrations', then the server's), minus the deliberate
   * `ai` warning (scripts/wrangler-output.mjs). Without it, output is kept only for error messages. */
  onOutput?: (text: string, stream: "stdout" | "stderr") => void;
}

/** A running local server. */
export interface LocalServer {
  url: string;
  port: number;
  /** The process group of `wrangler dev` (wrangler and the workerd it runs). */
  pid: number;
  /** The end of what wrangler printed, for error messages. */
  output(): string;
  /** Resolves with wrangler's exit code when it exits, on its own or after stop(). */
  exited: Promise<number | null>;
  /** SIGTERM to the process group, SIGKILL if it is still there after a grace period. */
  stop(): Promise<void>;
}

/** A port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number>;

/** Applies the D1 migrations to every local shard's database in `persistTo` (wrangler's default state without it). */
export function applyLocalMigrations(options: {
  root: string;
  persistTo?: string;
  onOutput?: WranglerDevOptions["onOutput"];
  tail?: { text: string };
}): Promise<void>;

/**
 * Applies the D1 migrations to the local database (unless `migrate` is false), starts `wrangler dev --env local` (Local Explorer off)
 * and resolves once GET /health answers 200. Rejects (with wrangler's output) if a step fails.
 */
export function startWranglerDev(options: WranglerDevOptions): Promise<LocalServer>;
