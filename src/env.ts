import * as z from "zod";
import { DEV_TOKEN } from "./contracts/limits";
import type { EventHubRpc, QueueCoordinatorRpc, SchedulerRpc } from "./protocols/durable-objects";

/** The Worker's bindings (wrangler.toml) and secrets. */
export interface Env {
  DB: D1Database;
  /** One object per queue partition (class Coordinator): long polls, alarms, push dispatch. */
  COORDINATOR: DurableObjectNamespace<QueueCoordinatorRpc>;
  /** One object per queue (class EventHub): its event stream. */
  EVENT_HUB: DurableObjectNamespace<EventHubRpc>;
  /** One object (class Scheduler): fires every schedule. */
  SCHEDULER: DurableObjectNamespace<SchedulerRpc>;
  /** "production" (default in wrangler.toml) or "development" (set by `npm start`: DEV_TOKEN when no
   * EDGEQ_TOKEN is set, scheduled events refused, the tick on POST /__tick; docs/api.md, "What `npm start`
   * serves"). */
  ENVIRONMENT?: string;
  /** Bearer token(s): one, or several separated by commas to rotate without downtime. */
  EDGEQ_TOKEN?: string;
  /** Workers AI; absent in local development and tests (processors then use local engines or none). */
  AI?: Ai;
  /** Artifacts (rendered audio, ...) under `tasks/{id}/{name}`. */
  ARTIFACTS: R2Bucket;
  /** Workers AI model for `tts` (e.g. @cf/myshell-ai/melotts or @cf/deepgram/aura-1). */
  TTS_MODEL?: string;
  /** Workers AI model for `tag` (a text-generation model asked for JSON). */
  TAG_MODEL?: string;
  /** HMAC key for the `http` processor's signature header; webhooks are refused without it. */
  WEBHOOK_SECRET?: string;
}

const settingsSchema = z.object({
  ENVIRONMENT: z.enum(["production", "development", "test"]).default("production"),
  EDGEQ_TOKEN: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((t) => t.trim())
        .filter((t) => t.length > 0),
    ),
});

/** The validated settings the Worker runs with. */
export type Settings = z.infer<typeof settingsSchema>;

/** The last settings read, by the raw values they were read from (see readSettings). */
let lastRead: { environment: string | undefined; token: string | undefined; settings: Settings } | undefined;

/**
 * Validates the environment's plain settings (the trust boundary with wrangler config and secrets).
 * Throws a readable error when a value is malformed, e.g. an unknown ENVIRONMENT.
 *
 * Every request reads them (auth), so the last result is kept by the raw values it came from: parsing
 * cost about a millisecond of CPU per request (a CPU profile of the long-poll probe under `wrangler dev`,
 * docs/api.md, "Long polls"). A new secret is a new raw value and is parsed again; the result is frozen, being shared.
 */
export function readSettings(env: Env): Settings {
  if (lastRead && lastRead.environment === env.ENVIRONMENT && lastRead.token === env.EDGEQ_TOKEN) {
    return lastRead.settings;
  }
  const parsed = settingsSchema.safeParse({ ENVIRONMENT: env.ENVIRONMENT, EDGEQ_TOKEN: env.EDGEQ_TOKEN });
  if (!parsed.success) {
    throw new Error(
      `invalid environment: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  }
  const settings = Object.freeze({ ...parsed.data, EDGEQ_TOKEN: Object.freeze(parsed.data.EDGEQ_TOKEN) }) as Settings;
  lastRead = { environment: env.ENVIRONMENT, token: env.EDGEQ_TOKEN, settings };
  return settings;
}

/**
 * The bearer tokens the Worker accepts: EDGEQ_TOKEN's; without it, DEV_TOKEN outside production and none in
 * production (where the API then refuses to serve: 503 not_configured). The one rule of who holds the
 * token — /v1, /metrics, the events sockets and /health ask it.
 *
 * @example
 * acceptedTokens(readSettings({ ...env, ENVIRONMENT: "development", EDGEQ_TOKEN: undefined })); // ["edgeq-dev-token"]
 */
export function acceptedTokens(settings: Settings): readonly string[] {
  if (settings.EDGEQ_TOKEN.length > 0) return settings.EDGEQ_TOKEN;
  return settings.ENVIRONMENT === "production" ? [] : [DEV_TOKEN];
}

/**
 * Whether the Worker accepts the published development credentials besides DEV_TOKEN (the SQS endpoint's
 * development key pair): exactly where DEV_TOKEN itself is accepted, and never in production. A server
 * given a token of its own (`EDGEQ_TOKEN=… npm start`) is one its user means to protect, so it drops every
 * published credential at once rather than leave a second way in.
 *
 * @example
 * acceptsDevCredentials(readSettings({ ...env, ENVIRONMENT: "development", EDGEQ_TOKEN: "mine" })); // false
 */
export function acceptsDevCredentials(settings: Settings): boolean {
  return settings.ENVIRONMENT !== "production" && acceptedTokens(settings).includes(DEV_TOKEN);
}
