import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { forgetPlacements } from "../../src/shards/directory";
import { SQS_MAX_TAGS } from "../../src/contracts/limits";
import { enqueueTasks } from "../../src/engine/enqueue";
import { queueDb, uniqueQueue } from "../helpers";
import { call, callText, ORIGIN, sqsQueryRequest, sqsRequest } from "./signed-request";

/** Calls one JSON-protocol operation. */
const sqs = async (operation: string, input: unknown) => call(await sqsRequest(operation, input));

/** The text of every `<name>` element, in document order. */
function all(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, "g"))].map((m) => m[1]!);
}

/** Creates a queue over SQS and answers its URL. */
async function created(input: Record<string, unknown> = {}) {
  const name = uniqueQueue("sqs-tags");
  const res = await sqs("CreateQueue", { QueueName: name, ...input });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { name, url: res.body.QueueUrl as string };
}

/** Expects an SQS JSON-protocol error. */
function expectSqsError(res: { status: number; body: Record<string, unknown> }, code: string, message?: RegExp) {
  expect([res.status, res.body.__type]).toEqual([400, `com.amazonaws.sqs#${code}`]);
  if (message) expect(res.body.message).toMatch(message);
}

describe("queue tags over the JSON protocol", () => {
  it("TagQueue adds and overwrites, UntagQueue removes (unknown keys ignored), ListQueueTags lists", async () => {
    const { url } = await created();
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({});
    expect((await sqs("TagQueue", { QueueUrl: url, Tags: { team: "growth", env: "prod" } })).body).toEqual({});
    await sqs("TagQueue", { QueueUrl: url, Tags: { env: "staging", "cost-centre": "42", "ключ é": "значение" } });
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({
      Tags: { team: "growth", env: "staging", "cost-centre": "42", "ключ é": "значение" },
    });
    expect((await sqs("UntagQueue", { QueueUrl: url, TagKeys: ["env", "never-set"] })).status).toBe(200);
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({
      Tags: { team: "growth", "cost-centre": "42", "ключ é": "значение" },
    });
    await sqs("UntagQueue", { QueueUrl: url, TagKeys: ["team", "cost-centre", "ключ é"] });
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({});
  });

  it("CreateQueue's tags tag the queue it creates; on an existing queue they change nothing", async () => {
    const { name, url } = await created({ tags: { owner: "ops" } });
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({ Tags: { owner: "ops" } });
    expect((await sqs("CreateQueue", { QueueName: name, tags: { owner: "someone else" } })).body.QueueUrl).toBe(url);
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({ Tags: { owner: "ops" } });
    const bad = await sqs("CreateQueue", { QueueName: uniqueQueue("sqs-tags"), tags: { "aws:owner": "x" } });
    expectSqsError(bad, "InvalidParameterValue", /tags.*aws:/);
  });

  it("a tag written through a route cached from before another isolate moved the queue is not lost", async () => {
    const { name, url } = await created();
    const home = openDb(env.DB);
    const placed = await home.get<{ shard: string }>(
      sql`SELECT shard FROM placements WHERE queue = ${name} AND part = 0`,
    );
    const other = placed!.shard === "DB" ? "DB_1" : "DB";
    // This isolate caches the queue's route (ListQueueTags reads the queue's row on its first shard)...
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({});
    // ...then another isolate finishes moving partition 0: the directory names the other database, which
    // holds the queue's row (a move carries it; configs are on every shard already). Not through this
    // isolate, whose cached route still names the old one.
    await home.run(sql`UPDATE placements SET shard = ${other} WHERE queue = ${name} AND part = 0`);
    expect((await sqs("TagQueue", { QueueUrl: url, Tags: { team: "growth" } })).status).toBe(200);
    expect((await sqs("SetQueueAttributes", { QueueUrl: url, Attributes: { DelaySeconds: "7" } })).status).toBe(200);
    // Once every cache has expired (or in any other isolate), the queue is read where the directory says.
    forgetPlacements(name);
    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({ Tags: { team: "growth" } });
    const attributes = await sqs("GetQueueAttributes", { QueueUrl: url, AttributeNames: ["DelaySeconds"] });
    expect(attributes.body).toEqual({ Attributes: { DelaySeconds: "7" } });
  });

  it(`holds at most ${SQS_MAX_TAGS} tags per queue: a call that would pass it changes nothing`, async () => {
    const { url } = await created();
    const tags = (from: number, n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${from + i}`, `v${from + i}`]));
    expectSqsError(await sqs("TagQueue", { QueueUrl: url, Tags: tags(0, SQS_MAX_TAGS + 1) }), "InvalidParameterValue");
    await sqs("TagQueue", { QueueUrl: url, Tags: tags(0, SQS_MAX_TAGS - 1) });
    // One new and one overwritten: 50 in all, allowed; then one more new is refused and nothing changes.
    expect((await sqs("TagQueue", { QueueUrl: url, Tags: { k0: "again", extra: "1" } })).status).toBe(200);
    const refused = await sqs("TagQueue", { QueueUrl: url, Tags: { k1: "changed", more: "1" } });
    expectSqsError(refused, "InvalidParameterValue", /Too many tags/);
    const listed = (await sqs("ListQueueTags", { QueueUrl: url })).body.Tags as Record<string, string>;
    expect(Object.keys(listed)).toHaveLength(SQS_MAX_TAGS);
    expect(listed).toMatchObject({ k0: "again", k1: "v1", extra: "1" });
    expect(listed.more).toBeUndefined();
  });

  it("refuses what SQS refuses, naming the parameter; a queue that does not exist is QueueDoesNotExist", async () => {
    const { url } = await created();
    const tag = (Tags: unknown) => sqs("TagQueue", { QueueUrl: url, Tags });
    expectSqsError(await tag({}), "MissingParameter", /Tags/);
    expectSqsError(await sqs("TagQueue", { QueueUrl: url }), "MissingParameter", /Tags/);
    expectSqsError(await tag({ "": "empty key" }), "InvalidParameterValue", /Tags.*between 1 and 128/);
    expectSqsError(await tag({ ["k".repeat(129)]: "x" }), "InvalidParameterValue", /between 1 and 128/);
    expectSqsError(await tag({ k: "v".repeat(257) }), "InvalidParameterValue", /at most 256/);
    expectSqsError(await tag({ "AWS:cost": "x" }), "InvalidParameterValue", /aws:/);
    expectSqsError(await tag({ k: 7 }), "InvalidParameterValue", /Tags/);
    // Lengths are Unicode characters: 128 four-byte characters and 256 of them as a value are allowed.
    expect((await tag({ ["😀".repeat(128)]: "😀".repeat(256) })).status).toBe(200);
    expectSqsError(await sqs("UntagQueue", { QueueUrl: url, TagKeys: [] }), "MissingParameter", /TagKeys/);
    expectSqsError(await sqs("UntagQueue", { QueueUrl: url, TagKeys: [""] }), "InvalidParameterValue", /TagKeys/);
    const missing = `${ORIGIN}/sqs/000000000000/${uniqueQueue("nope")}`;
    expectSqsError(await sqs("TagQueue", { QueueUrl: missing, Tags: { a: "b" } }), "QueueDoesNotExist");
    expectSqsError(await sqs("UntagQueue", { QueueUrl: missing, TagKeys: ["a"] }), "QueueDoesNotExist");
    expectSqsError(await sqs("ListQueueTags", { QueueUrl: missing }), "QueueDoesNotExist");
  });

  it("tags a queue used only natively (a config row holding just its tags: the defaults otherwise); DeleteQueue drops them", async () => {
    const name = uniqueQueue("sqs-tags");
    await enqueueTasks(await queueDb(name), name, [{}], Date.now());
    const url = `${ORIGIN}/sqs/000000000000/${name}`;
    expect((await sqs("TagQueue", { QueueUrl: url, Tags: { native: "yes" } })).status).toBe(200);
    const attrs = await sqs("GetQueueAttributes", { QueueUrl: url, AttributeNames: ["VisibilityTimeout"] });
    expect(attrs.body).toEqual({ Attributes: { VisibilityTimeout: "30" } });
    expect((await sqs("DeleteQueue", { QueueUrl: url })).status).toBe(200);
    const row = await (await queueDb(name)).get(sql`SELECT sqs_tags FROM queues WHERE name = ${name}`);
    expect(row).toBeUndefined();
  });
});

describe("queue tags over the query protocol", () => {
  it("Tag.N.Key / Tag.N.Value, TagKey.N, and ListQueueTags' flattened <Tag> elements", async () => {
    const name = uniqueQueue("sqs-tags");
    const create = await callText(
      await sqsQueryRequest({ Action: "CreateQueue", QueueName: name, "Tag.1.Key": "owner", "Tag.1.Value": "ops" }),
    );
    expect(create.status, create.text).toBe(200);
    const url = all(create.text, "QueueUrl")[0]!;
    const tagged = await callText(
      await sqsQueryRequest({
        Action: "TagQueue",
        QueueUrl: url,
        "Tag.1.Key": "team",
        "Tag.1.Value": "a & b",
        "Tag.2.Key": "env",
        "Tag.2.Value": "prod",
      }),
    );
    expect(tagged.status, tagged.text).toBe(200);
    expect(tagged.text).toContain("<TagQueueResponse");
    const untagged = await callText(await sqsQueryRequest({ Action: "UntagQueue", QueueUrl: url, "TagKey.1": "env" }));
    expect(untagged.status, untagged.text).toBe(200);
    const listed = await callText(await sqsQueryRequest({ Action: "ListQueueTags", QueueUrl: url }));
    expect(listed.status).toBe(200);
    expect(all(listed.text, "ListQueueTagsResult")).toEqual([
      "<Tag><Key>owner</Key><Value>ops</Value></Tag><Tag><Key>team</Key><Value>a &amp; b</Value></Tag>",
    ]);
    const noKeys = await callText(await sqsQueryRequest({ Action: "UntagQueue", QueueUrl: url }));
    expect(all(noKeys.text, "Code")).toEqual(["MissingParameter"]);
  });
});
