import { hex, hmacSha256, timingSafeEqual } from "../contracts/crypto";
import { SQS_MAX_CLOCK_SKEW_S } from "../contracts/limits";
import { SqsError } from "./errors";

/**
 * AWS Signature Version 4, verified with Web Crypto: the canonical request, the string to sign and the
 * HMAC-SHA256 key chain, exactly as AWS documents them (the AWS test suite's vectors are checked in
 * test/sqs/sigv4.test.ts). Only the `Authorization` header form is accepted (what every SDK sends);
 * presigned query-string signatures are refused.
 */

const ALGORITHM = "AWS4-HMAC-SHA256";
const encoder = new TextEncoder();

/** The parts of an `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…` header. */
export interface SigV4Authorization {
  accessKeyId: string;
  /** yyyymmdd of the credential scope. */
  scopeDate: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

/** A request as the verifier sees it: the raw path and query as sent, headers, and the body's bytes. */
export interface SignedRequest {
  method: string;
  /** The path as sent, percent-encoding kept (`new URL(url).pathname`). */
  path: string;
  /** The query string without `?`, as sent. */
  query: string;
  headers: Headers;
  body: Uint8Array;
}

/** SHA-256 of text or bytes, lower-case hex. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes));
}

/** RFC 3986 percent-encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ is escaped. */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function decodeLenient(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return text;
  }
}

/**
 * Parses the Authorization header; `IncompleteSignature` names what is missing.
 *
 * @example
 * parseAuthorization("AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc");
 */
export function parseAuthorization(header: string): SigV4Authorization {
  if (!header.startsWith(`${ALGORITHM} `)) {
    throw new SqsError("IncompleteSignature", `Authorization must use ${ALGORITHM} (Signature Version 4)`);
  }
  const fields = new Map<string, string>();
  for (const part of header.slice(ALGORITHM.length + 1).split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get("Credential");
  const signedHeaders = fields.get("SignedHeaders");
  const signature = fields.get("Signature");
  for (const [name, value] of [
    ["Credential", credential],
    ["SignedHeaders", signedHeaders],
    ["Signature", signature],
  ] as const) {
    if (!value) throw new SqsError("IncompleteSignature", `Authorization header requires '${name}' parameter`);
  }
  const scope = credential!.split("/");
  if (scope.length !== 5 || scope[4] !== "aws4_request" || !/^\d{8}$/.test(scope[1]!)) {
    throw new SqsError(
      "IncompleteSignature",
      "Credential must be <access key id>/<yyyymmdd>/<region>/<service>/aws4_request",
    );
  }
  return {
    accessKeyId: scope[0]!,
    scopeDate: scope[1]!,
    region: scope[2]!,
    service: scope[3]!,
    signedHeaders: signedHeaders!.split(";").map((h) => h.trim().toLowerCase()),
    signature: signature!.toLowerCase(),
  };
}

/** The canonical URI: each path segment (as sent) percent-encoded again, as for every service but S3. */
export function canonicalUri(path: string): string {
  if (path === "" || path === "/") return "/";
  return path
    .split("/")
    .map((segment) => uriEncode(segment))
    .join("/");
}

/** The canonical query string: parameters decoded, re-encoded per RFC 3986, sorted by name then value. */
export function canonicalQuery(query: string): string {
  if (query === "") return "";
  return query
    .split("&")
    .filter((pair) => pair.length > 0)
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = eq < 0 ? pair : pair.slice(0, eq);
      const value = eq < 0 ? "" : pair.slice(eq + 1);
      return [uriEncode(decodeLenient(name)), uriEncode(decodeLenient(value))] as const;
    })
    .sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
}

/**
 * The canonical request (the first thing SigV4 hashes).
 *
 * @example
 * await canonicalRequest(request, ["host", "x-amz-date"]);
 */
export async function canonicalRequest(request: SignedRequest, signedHeaders: string[]): Promise<string> {
  const headerLines = signedHeaders.map((name) => {
    const value = (request.headers.get(name) ?? "").trim().replace(/\s+/g, " ");
    return `${name}:${value}\n`;
  });
  const payloadHash = request.headers.get("x-amz-content-sha256") ?? (await sha256Hex(request.body));
  return [
    request.method.toUpperCase(),
    canonicalUri(request.path),
    canonicalQuery(request.query),
    headerLines.join(""),
    signedHeaders.join(";"),
    payloadHash,
  ].join("\n");
}

/** The string to sign: algorithm, request time, credential scope, hash of the canonical request. */
export async function stringToSign(amzDate: string, scope: string, canonical: string): Promise<string> {
  return [ALGORITHM, amzDate, scope, await sha256Hex(canonical)].join("\n");
}

/** The signing key: HMAC-SHA256 chained over date, region, service and "aws4_request". */
export async function signingKey(secret: string, date: string, region: string, service: string): Promise<Uint8Array> {
  const kDate = await hmacSha256(`AWS4${secret}`, date);
  const kRegion = await hmacSha256(kDate, region);
  const kService = await hmacSha256(kRegion, service);
  return hmacSha256(kService, "aws4_request");
}

/**
 * The signature of a request for the given credential scope: hex HMAC of the string to sign.
 *
 * @example
 * const signature = await signRequest(request, auth, amzDate, secret);
 */
export async function signRequest(
  request: SignedRequest,
  auth: Omit<SigV4Authorization, "signature" | "accessKeyId">,
  amzDate: string,
  secret: string,
): Promise<string> {
  const scope = `${auth.scopeDate}/${auth.region}/${auth.service}/aws4_request`;
  const canonical = await canonicalRequest(request, auth.signedHeaders);
  const key = await signingKey(secret, auth.scopeDate, auth.region, auth.service);
  return hex(await hmacSha256(key, await stringToSign(amzDate, scope, canonical)));
}

/** `20150830T123600Z` -> ms since the epoch, or NaN. */
export function parseAmzDate(text: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

/**
 * Verifies a request's SigV4 signature against the secret of its access key (`secretFor`), and that it
 * was signed within SQS_MAX_CLOCK_SKEW_S of `now`. Throws the SqsError AWS would answer:
 * MissingAuthenticationToken, IncompleteSignature, InvalidClientTokenId (unknown key), RequestExpired,
 * SignatureDoesNotMatch. Returns who signed: the access key id, and the region of the credential scope.
 *
 * @example
 * const { accessKeyId, region } = await verifySigV4(request, (id) => secrets.get(id), Date.now());
 */
export async function verifySigV4(
  request: SignedRequest,
  secretFor: (accessKeyId: string) => string | undefined,
  now: number,
): Promise<{ accessKeyId: string; region: string }> {
  const header = request.headers.get("authorization");
  if (!header) {
    throw new SqsError(
      "MissingAuthenticationToken",
      "Request is missing Authentication Token (send a SigV4-signed request)",
    );
  }
  const auth = parseAuthorization(header);
  if (!auth.signedHeaders.includes("host")) {
    throw new SqsError("IncompleteSignature", "SignedHeaders must include host");
  }
  const amzDate = request.headers.get("x-amz-date");
  if (!amzDate) throw new SqsError("IncompleteSignature", "the request must carry X-Amz-Date");
  const signedAt = parseAmzDate(amzDate);
  if (Number.isNaN(signedAt))
    throw new SqsError("IncompleteSignature", `X-Amz-Date ${amzDate} is not yyyymmddThhmmssZ`);
  if (Math.abs(now - signedAt) > SQS_MAX_CLOCK_SKEW_S * 1000) {
    throw new SqsError(
      "RequestExpired",
      `Signature expired: ${amzDate} is more than ${SQS_MAX_CLOCK_SKEW_S / 60} minutes from the server's time ${new Date(now).toISOString()}`,
    );
  }
  if (!amzDate.startsWith(auth.scopeDate)) {
    throw new SqsError(
      "SignatureDoesNotMatch",
      `Credential scope date ${auth.scopeDate} does not match X-Amz-Date ${amzDate}`,
    );
  }
  if (auth.service !== "sqs") {
    throw new SqsError(
      "SignatureDoesNotMatch",
      `Credential should be scoped to correct service: 'sqs' (got '${auth.service}')`,
    );
  }
  const secret = secretFor(auth.accessKeyId);
  if (secret === undefined) {
    throw new SqsError(
      "InvalidClientTokenId",
      "The security token included in the request is invalid (unknown access key id)",
    );
  }
  const expected = await signRequest(request, auth, amzDate, secret);
  if (!timingSafeEqual(expected, auth.signature)) {
    throw new SqsError(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
    );
  }
  return { accessKeyId: auth.accessKeyId, region: auth.region };
}
