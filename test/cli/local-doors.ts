import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "smol-toml";

/**
 * The routes `wrangler dev` adds beside the Worker's own, on the same port, that reached local data or the
 * cron tick without edgeq's token (issue 28, item 4): the Local Explorer (wrangler 4.164, on by default),
 * the scheduled-event triggers and `--test-scheduled`'s /__scheduled, the email trigger — and the
 * development tick route that replaces them, without its token. With the launcher's settings
 * (scripts/wrangler-dev.mjs) and the Worker's refusals in development, none may answer 2xx.
 */
export interface Door {
  what: string;
  method: "GET" | "POST";
  path: string;
  /** A JSON body (sent with Content-Type: application/json, as the Local Explorer requires). */
  json?: unknown;
  /** A raw body. */
  body?: string;
}

/** The local D1 `DB`'s id, as wrangler.toml's [env.local] names it (the Local Explorer addresses D1 by id). */
function localDbId(): string {
  const config = parse(readFileSync(join(process.cwd(), "wrangler.toml"), "utf8")) as {
    env: { local: { d1_databases: Array<{ binding: string; database_id: string }> } };
  };
  const db = config.env.local.d1_databases.find((d) => d.binding === "DB");
  if (!db) throw new Error("wrangler.toml: no DB in [env.local]");
  return db.database_id;
}

/** A clock a day ahead: a tick run with it would reap every lease at once. */
const dayAhead = () => Date.now() + 86_400_000;

/** A scheduled event's query: the minute cron and a clock a day ahead. */
const scheduledQuery = () => `cron=${encodeURIComponent("* * * * *")}&time=${dayAhead()}`;

/** A message the email trigger parses (From, To, Message-ID). */
const EMAIL = "From: a@example.com\r\nTo: b@example.com\r\nMessage-ID: <door@example.com>\r\nSubject: x\r\n\r\nx\r\n";

/** Every door, built when asked (the scheduled ones carry a clock a day from now). */
export function localDoors(): Door[] {
  const explorer = "/cdn-cgi/local/explorer";
  return [
    {
      what: "the Local Explorer's D1 query",
      method: "POST",
      path: `${explorer}/api/d1/database/${localDbId()}/raw`,
      json: { sql: "SELECT count(*) FROM tasks" },
    },
    { what: "the Local Explorer's D1 list", method: "GET", path: `${explorer}/api/d1/database` },
    {
      what: "the Local Explorer's Durable Object namespaces",
      method: "GET",
      path: `${explorer}/api/workers/durable_objects/namespaces`,
    },
    { what: "the Local Explorer's R2 buckets", method: "GET", path: `${explorer}/api/r2/buckets` },
    { what: "the Local Explorer's page", method: "GET", path: explorer },
    { what: "the Local Explorer's old path", method: "GET", path: "/cdn-cgi/explorer/api/d1/database" },
    {
      what: "the Local Explorer's scheduled trigger",
      method: "POST",
      // The Worker as wrangler names it: wrangler.toml's name and the environment.
      path: `${explorer}/api/local/scheduled?worker=edgeq-local`,
      json: { cron: "* * * * *", scheduled_time: dayAhead() },
    },
    { what: "the scheduled trigger", method: "GET", path: `/cdn-cgi/local/scheduled?${scheduledQuery()}` },
    { what: "the scheduled trigger's old path", method: "GET", path: `/cdn-cgi/handler/scheduled?${scheduledQuery()}` },
    { what: "Miniflare's legacy scheduled path", method: "GET", path: `/cdn-cgi/mf/scheduled?${scheduledQuery()}` },
    { what: "--test-scheduled's /__scheduled", method: "GET", path: `/__scheduled?${scheduledQuery()}` },
    {
      what: "the email trigger",
      method: "POST",
      path: "/cdn-cgi/local/email?from=a@example.com&to=b@example.com",
      body: EMAIL,
    },
    { what: "the development tick without its token", method: "POST", path: "/__tick" },
  ];
}

/**
 * Each door's answer without a token, as "<what>: <status>" — for one readable comparison.
 *
 * @example
 * expect(await doorAnswers(url)).toEqual(doors.map((d) => `${d.what}: refused`));
 */
export async function doorAnswers(url: string): Promise<string[]> {
  const answers: string[] = [];
  for (const door of localDoors()) {
    const res = await fetch(`${url}${door.path}`, {
      method: door.method,
      headers: door.json === undefined ? {} : { "Content-Type": "application/json" },
      body: door.json === undefined ? door.body : JSON.stringify(door.json),
    });
    await res.arrayBuffer();
    answers.push(`${door.what}: ${res.ok ? `${res.status} served` : "refused"}`);
  }
  return answers;
}
