import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/contracts/limits";
import { row, snapshot, uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError, getTask, lease, leaseOne, type AckResults } from "./api";

/** A value nested `levels` deep: `levels` arrays around a number. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** The same as raw JSON text, for depths JSON.stringify cannot reach without overflowing the stack. */
const nestedText = (levels: number) => "[".repeat(levels) + "1" + "]".repeat(levels);

/** A string holding a lone (unpaired) UTF-16 surrogate; JSON.stringify escapes it as `\ud800`. */
const LONE = "a\ud800b";

const enqueuePath = (queue: string) => `/v1/queues/${queue}/tasks`;

describe("deep JSON: refused at the boundary with 400 naming the field, never a 500", () => {
  const tooDeep = nested(999);

  const enqueueBodies: Array<[string, unknown, RegExp]> = [
    ["a payload", { payload: tooDeep }, new RegExp(`^payload(\\[0\\])*: nested deeper than ${MAX_JSON_DEPTH}`)],
    ["one payload of a batch", { tasks: [{}, {}, {}, { payload: { a: tooDeep } }] }, /^tasks\[3\]\.payload\.a/],
    ["a then payload", { then: [{ type: "next", payload: { deep: tooDeep } }] }, /^then\[0\]\.payload\.deep/],
    [
      "a nested then payload",
      { then: [{ type: "a", then: [{ type: "b", payload: { deep: tooDeep } }] }] },
      /^then\[0\]\.then\[0\]\.payload\.deep/,
    ],
  ];
  for (const [label, body, message] of enqueueBodies) {
    it(`enqueue: ${label}, and nothing is created`, async () => {
      const queue = uniqueQueue("deep");
      expectError(await call("POST", enqueuePath(queue), { body }), 400, "invalid_request", message);
      expect(await snapshot(queue)).toEqual([]);
    });
  }

  it(`accepts and stores exactly a payload nested ${MAX_JSON_DEPTH} levels; ${MAX_JSON_DEPTH + 1} is refused`, async () => {
    const queue = uniqueQueue("deep");
    const id = await enqueueOne(queue, { payload: nested(MAX_JSON_DEPTH) });
    expect((await getTask(id)).payload).toEqual(nested(MAX_JSON_DEPTH));
    expectError(
      await call("POST", enqueuePath(queue), { body: { payload: nested(MAX_JSON_DEPTH + 1) } }),
      400,
      "invalid_request",
      /^payload/,
    );
  });

  it("refuses a 100,000-level body with a 400, not a crash", async () => {
    const queue = uniqueQueue("deep");
    const res = await call("POST", enqueuePath(queue), { raw: `{"payload":${nestedText(100_000)}}` });
    expectError(res, 400, "invalid_request");
    expect(await snapshot(queue)).toEqual([]);
  });

  it("complete: a deep result is 400 naming result, with a wrong token as with the right one", async () => {
    const queue = uniqueQueue("deep");
    await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const before = await snapshot(queue);
    for (const token of ["0".repeat(32), leased.lease_token]) {
      const res = await call("POST", `/v1/tasks/${leased.id}/complete`, {
        body: { lease_token: token, result: { r: tooDeep } },
      });
      expectError(res, 400, "invalid_request", /^result\.r/);
    }
    expect(await snapshot(queue)).toEqual(before);
  });

  it("heartbeat: a deep checkpoint is 400 naming checkpoint", async () => {
    const queue = uniqueQueue("deep");
    await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const before = await snapshot(queue);
    const res = await call("POST", `/v1/tasks/${leased.id}/heartbeat`, {
      body: { lease_token: leased.lease_token, progress: 10, checkpoint: tooDeep },
    });
    expectError(res, 400, "invalid_request", /^checkpoint/);
    expect(await snapshot(queue)).toEqual(before);
  });

  // Needs the engine's per-item check in completeTasks (src/engine/complete.ts).
  it("batch ack: only the item with a deep result fails (invalid_request); the others apply", async () => {
    const queue = uniqueQueue("deep");
    await enqueueOne(queue);
    await enqueueOne(queue);
    const [a, b] = await lease(queue, { max: 2 });
    const res = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: {
        complete: [
          { id: a!.id, lease_token: a!.lease_token, result: { r: tooDeep } },
          { id: b!.id, lease_token: b!.lease_token, result: "fine" },
        ],
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.results).toEqual([
      expect.objectContaining({
        id: a!.id,
        ok: false,
        error: { code: "invalid_request", message: expect.stringMatching(/result/) },
      }),
      expect.objectContaining({ id: b!.id, ok: true, state: "completed" }),
    ]);
    expect(await getTask(a!.id)).toMatchObject({ state: "processing", result: null });
    expect(await getTask(b!.id)).toMatchObject({ state: "completed", result: "fine" });
  });
});

describe("what is stored is what was sent: lone surrogates and non-finite numbers are refused", () => {
  it("stores astral characters (well-formed surrogate pairs) exactly in every string field", async () => {
    const queue = uniqueQueue("exact");
    const text = "voix 🎙️ 𝄞 ü";
    const id = await enqueueOne(queue, {
      payload: { [text]: text },
      group: text,
      dedupe_key: text,
      then: [{ type: "next", group: text, payload: { k: text } }],
    });
    expect(await getTask(id)).toMatchObject({ payload: { [text]: text }, group: text, dedupe_key: text });
    const leased = await leaseOne(queue, { holder: text });
    expect(leased.lease_holder).toBe(text);
    const hb = await call("POST", `/v1/tasks/${id}/heartbeat`, {
      body: { lease_token: leased.lease_token, message: text, checkpoint: [text] },
    });
    expect(hb.status, hb.text).toBe(200);
    expect(await getTask(id)).toMatchObject({ progress_message: text, checkpoint: [text] });
  });

  const enqueueCases: Array<[string, unknown, RegExp]> = [
    ["group", { group: LONE }, /^group: .*surrogate/],
    ["dedupe_key", { dedupe_key: LONE }, /^dedupe_key: .*surrogate/],
    ["a batch task's group", { tasks: [{}, { group: LONE }] }, /^tasks\[1\]\.group: .*surrogate/],
    ["a payload string", { payload: { name: LONE } }, /^payload\.name: .*surrogate/],
    ["a payload key", { payload: { [LONE]: 1 } }, /^payload: .*key.*surrogate/],
    ["a then group", { then: [{ type: "n", group: LONE }] }, /^then\[0\]\.group: .*surrogate/],
    ["a then dedupe_key", { then: [{ type: "n", dedupe_key: LONE }] }, /^then\[0\]\.dedupe_key: .*surrogate/],
    ["a then payload", { then: [{ type: "n", payload: { s: LONE } }] }, /^then\[0\]\.payload\.s: .*surrogate/],
  ];
  for (const [label, body, message] of enqueueCases) {
    it(`enqueue refuses a lone surrogate in ${label}`, async () => {
      const queue = uniqueQueue("exact");
      expectError(await call("POST", enqueuePath(queue), { body }), 400, "invalid_request", message);
      expect(await snapshot(queue)).toEqual([]);
    });
  }

  const numberCases: Array<[string, string, RegExp]> = [
    ["a payload number", '{"payload":{"n":1e400}}', /^payload\.n: .*not finite/],
    ["a negative one", '{"payload":[-1e400]}', /^payload\[0\]: .*not finite/],
    ["a batch payload", '{"tasks":[{},{"payload":1e400}]}', /^tasks\[1\]\.payload: .*not finite/],
    ["a priority", '{"priority":1e400}', /^priority: /],
    ["a delay", '{"delay_s":1e400}', /^delay_s: /],
  ];
  for (const [label, raw, message] of numberCases) {
    it(`enqueue refuses 1e400 (parsed as Infinity, stored as null) in ${label}`, async () => {
      const queue = uniqueQueue("exact");
      expectError(await call("POST", enqueuePath(queue), { raw }), 400, "invalid_request", message);
      expect(await snapshot(queue)).toEqual([]);
    });
  }

  it("lease refuses a lone surrogate in holder and leases nothing", async () => {
    const queue = uniqueQueue("exact");
    await enqueueOne(queue);
    const before = await snapshot(queue);
    const res = await call("POST", `/v1/queues/${queue}/lease`, { body: { holder: LONE } });
    expectError(res, 400, "invalid_request", /^holder: .*surrogate/);
    expect(await snapshot(queue)).toEqual(before);
  });

  it("complete, fail and heartbeat refuse a lone surrogate or 1e400 in what they store", async () => {
    const queue = uniqueQueue("exact");
    await enqueueOne(queue);
    const { id, lease_token } = await leaseOne(queue);
    const before = await snapshot(queue);
    const token = JSON.stringify(lease_token);
    const cases: Array<[string, string, RegExp]> = [
      ["complete", JSON.stringify({ lease_token, result: { s: LONE } }), /^result\.s: .*surrogate/],
      ["complete", `{"lease_token":${token},"result":{"n":1e400}}`, /^result\.n: .*not finite/],
      ["fail", JSON.stringify({ lease_token, error: LONE }), /^error: .*surrogate/],
      ["fail", `{"lease_token":${token},"error":"x","retry_after_s":1e400}`, /^retry_after_s: /],
      ["heartbeat", JSON.stringify({ lease_token, message: LONE }), /^message: .*surrogate/],
      ["heartbeat", JSON.stringify({ lease_token, checkpoint: { [LONE]: 1 } }), /^checkpoint: .*surrogate/],
      ["heartbeat", `{"lease_token":${token},"checkpoint":1e400}`, /^checkpoint: .*not finite/],
      ["complete", JSON.stringify({ lease_token: LONE }), /^lease_token: .*surrogate/],
    ];
    for (const [op, raw, message] of cases) {
      expectError(await call("POST", `/v1/tasks/${id}/${op}`, { raw }), 400, "invalid_request", message);
    }
    expect(await snapshot(queue)).toEqual(before);
  });

  it("queue-wide cancel and redrive refuse a lone surrogate in group", async () => {
    const queue = uniqueQueue("exact");
    await enqueueOne(queue, { group: "g" });
    const before = await snapshot(queue);
    for (const op of ["cancel", "redrive"]) {
      const res = await call("POST", `/v1/queues/${queue}/${op}`, { body: { group: LONE } });
      expectError(res, 400, "invalid_request", /^group: .*surrogate/);
    }
    expect(await snapshot(queue)).toEqual(before);
  });
});

describe("bodies must be UTF-8", () => {
  const utf8 = new TextEncoder();
  /** `{"payload":"<bytes>"}` with raw bytes in the string. */
  const withBytes = (prefix: string, bytes: number[], suffix: string) =>
    new Uint8Array([...utf8.encode(prefix), ...bytes, ...utf8.encode(suffix)]);

  it("refuses an enqueue whose body is not valid UTF-8 (instead of storing U+FFFD)", async () => {
    const queue = uniqueQueue("utf8");
    for (const bytes of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const res = await call("POST", enqueuePath(queue), { raw: withBytes('{"payload":"a', bytes, 'b"}') });
      expectError(res, 400, "invalid_request", /^the body is not valid UTF-8/);
    }
    expect(await snapshot(queue)).toEqual([]);
  });

  it("refuses invalid UTF-8 on every JSON route that stores text", async () => {
    const queue = uniqueQueue("utf8");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const before = await snapshot(queue);
    const t = leased.lease_token;
    for (const [path, prefix] of [
      [`/v1/tasks/${id}/complete`, `{"lease_token":"${t}","result":"`],
      [`/v1/tasks/${id}/fail`, `{"lease_token":"${t}","error":"`],
      [`/v1/tasks/${id}/heartbeat`, `{"lease_token":"${t}","message":"`],
      [`/v1/queues/${queue}/ack`, `{"complete":[{"id":"${id}","lease_token":"${t}","result":"`],
      [`/v1/queues/${queue}/lease`, `{"holder":"`],
    ] as const) {
      const suffix = path.endsWith("/ack") ? '"}]}' : '"}';
      const res = await call("POST", path, { raw: withBytes(prefix, [0xff], suffix) });
      expectError(res, 400, "invalid_request", /not valid UTF-8/);
    }
    expect(await snapshot(queue)).toEqual(before);
    expect((await row(id)).state).toBe("processing");
  });

  it("accepts a U+FFFD the client really sent (EF BF BD) and stores it", async () => {
    const queue = uniqueQueue("utf8");
    const id = await enqueueOne(queue, { payload: "a\uFFFDb", group: "\uFFFD" });
    expect(await getTask(id)).toMatchObject({ payload: "a\uFFFDb", group: "\uFFFD" });
  });

  it("still accepts UTF-8 with a byte order mark and multi-byte characters", async () => {
    const queue = uniqueQueue("utf8");
    const res = await call("POST", enqueuePath(queue), {
      raw: new Uint8Array([0xef, 0xbb, 0xbf, ...utf8.encode('{"payload":"é🎙️"}')]),
    });
    expect(res.status, res.text).toBe(201);
    expect((await getTask((res.body as { tasks: Array<{ id: string }> }).tasks[0]!.id)).payload).toBe("é🎙️");
  });
});
