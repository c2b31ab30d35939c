import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  SQS_DEV_ACCESS_KEY_ID,
  SQS_DEV_SECRET_ACCESS_KEY,
  SQS_MAX_BATCH_ENTRIES,
  SQS_MAX_CLOCK_SKEW_S,
  SQS_MAX_TAG_KEY_CHARS,
  SQS_MAX_TAG_VALUE_CHARS,
  SQS_MAX_TAGS,
} from "../../src/contracts/limits";
import { SQS_ERRORS } from "../../src/sqs/errors";
import { SQS_OPERATIONS } from "../../src/sqs/operations";

const doc = readFileSync("docs/sqs.md", "utf8");
const readme = readFileSync("README.md", "utf8");

describe("docs/sqs.md says what the endpoint does", () => {
  it("lists every SQS error code with its status, and no other", () => {
    const section = doc.slice(doc.indexOf("## Errors"), doc.indexOf("## Cost"));
    const rows = [...section.matchAll(/^\| ([A-Za-z]+) +\| (\d{3}) +\|/gm)].map((m) => [m[1], Number(m[2])]);
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(SQS_ERRORS).map(([code, e]) => [code, e.status])),
    );
  });

  it("names every operation served, the development key pair and the limits from src/contracts/limits.ts", () => {
    for (const operation of Object.keys(SQS_OPERATIONS)) expect(doc, operation).toContain(operation);
    for (const text of [doc, readme]) {
      expect(text).toContain(SQS_DEV_ACCESS_KEY_ID);
      expect(text).toContain(SQS_DEV_SECRET_ACCESS_KEY);
    }
    expect(doc).toContain(`${SQS_MAX_BATCH_ENTRIES} entries per batch call`);
    expect(doc).toContain(`more than ${SQS_MAX_CLOCK_SKEW_S / 60} minutes`);
    expect(doc).toContain(`at most ${SQS_MAX_TAGS} tags per queue`);
    expect(doc).toContain(
      `keys of 1-${SQS_MAX_TAG_KEY_CHARS} characters, values of at most ${SQS_MAX_TAG_VALUE_CHARS}`,
    );
  });
});
