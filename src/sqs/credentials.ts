import { SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY } from "../contracts/limits";
import type { Env } from "../env";
import { acceptsDevCredentials, readSettings } from "../env";
import { SqsError } from "./errors";

/** The Worker's environment as the SQS endpoint reads it: its bindings plus the SQS_CREDENTIALS secret. */
export type SqsEnv = Env & {
  /** Access key pairs the SQS endpoint accepts: "AKID:secret" entries separated by commas (several, to
   * rotate keys without downtime). Set with `wrangler secret put SQS_CREDENTIALS`. */
  SQS_CREDENTIALS?: string;
};

/**
 * The access key pairs the SQS endpoint verifies signatures against, by access key id. Without
 * SQS_CREDENTIALS it accepts the published pair SQS_DEV_ACCESS_KEY_ID / SQS_DEV_SECRET_ACCESS_KEY where the
 * bearer API accepts the published DEV_TOKEN (acceptsDevCredentials, src/env.ts: outside production, with
 * no EDGEQ_TOKEN of one's own), and refuses otherwise (503 ServiceUnavailable) rather than leave a published
 * key beside a private token. A malformed entry (no ':') is a configuration error, never silently skipped.
 *
 * @example
 * const secrets = sqsCredentials({ ...env, SQS_CREDENTIALS: "AKID1:s1,AKID2:s2" }); // Map { AKID1 => s1, AKID2 => s2 }
 */
export function sqsCredentials(env: SqsEnv): Map<string, string> {
  const entries = (env.SQS_CREDENTIALS ?? "")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
  if (entries.length === 0) {
    const settings = readSettings(env);
    if (!acceptsDevCredentials(settings)) {
      throw new SqsError(
        "ServiceUnavailable",
        settings.ENVIRONMENT === "production"
          ? "SQS_CREDENTIALS is not set; the SQS endpoint refuses to serve without access keys"
          : "SQS_CREDENTIALS is not set, and EDGEQ_TOKEN is a token of your own: the development key pair is accepted only where the development token is; set SQS_CREDENTIALS",
      );
    }
    return new Map([[SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY]]);
  }
  const pairs = new Map<string, string>();
  for (const entry of entries) {
    const colon = entry.indexOf(":");
    if (colon <= 0 || colon === entry.length - 1) {
      throw new Error("invalid environment: SQS_CREDENTIALS entries must be <access key id>:<secret access key>");
    }
    pairs.set(entry.slice(0, colon), entry.slice(colon + 1));
  }
  return pairs;
}
