import { runDurableObjectAlarm } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { SessionHello } from "../../src/contracts/session";
import { row, uniqueQueue } from "../helpers";
import { coordinator, inObject } from "../support/coordinator";
import { until } from "../support/until";
import { call, enqueue, expectError, lease, ORIGIN, TOKEN, type AckResults } from "./api";

/** An open session socket, as a worker holds it. */
interface OpenSession {
  hello: z.infer<typeof SessionHello>;
  messages: string[];
  closes: Array<{ code: number; reason: string }>;
  ws: WebSocket;
}

async function openSession(queue: string, query = ""): Promise<OpenSession> {
  const res = await exports.default.fetch(
    new Request(`${ORIGIN}/v1/queues/${queue}/session${query}`, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${TOKEN}` },
    }),
  );
  if (res.status !== 101) throw new Error(`upgrade refused: ${res.status} ${await res.text()}`);
  const ws = res.webSocket!;
  const messages: string[] = [];
  const closes: Array<{ code: number; reason: string }> = [];
  ws.addEventListener("message", (e) => {
    messages.push(e.data as string);
  });
  ws.addEventListener("close", (e) => {
    closes.push({ code: e.code, reason: e.reason });
  });
  ws.accept();
  await until("the session's hello", () => messages.length > 0);
  return { hello: SessionHello.parse(JSON.parse(messages[0]!)), messages, closes, ws };
}

/** Moves the sessions of `queue`'s coordinator `ms` into the past: their opening and their closing (the
 * coordinator's clock is the real one here, as D1's and the Worker's are). */
async function age(queue: string, ms: number): Promise<void> {
  await inObject(coordinator(queue), async (_instance, state) => {
    for (const ws of state.getWebSockets("session")) {
      const a = ws.deserializeAttachment() as { openedAt: number };
      ws.serializeAttachment({ ...a, openedAt: a.openedAt - ms });
    }
    for (const [key, closed] of await state.storage.list<{ closedAt: number }>({ prefix: "session-closed:" })) {
      await state.storage.put(key, { ...closed, closedAt: closed.closedAt - ms });
    }
  });
}

/** Whether the coordinator has noted session `id` closed. */
function closedNoted(queue: string, id: string): Promise<boolean> {
  return inObject(
    coordinator(queue),
    async (_i, state) => (await state.storage.get(`session-closed:${id}`)) !== undefined,
  );
}

async function complete(queue: string, id: string, token: string) {
  return call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
    body: { complete: [{ id, lease_token: token }] },
  });
}

describe("worker sessions (GET /v1/queues/{queue}/session)", () => {
  it("opens with its id, timeout and lease length; a lease sent with it is written for the session's length", async () => {
    const queue = uniqueQueue("sess");
    const session = await openSession(queue, "?timeout_s=20");
    expect(session.hello).toMatchObject({ type: "session", timeout_s: 20, lease_s: 300 });
    expect(session.hello.id).toMatch(/^[A-Za-z0-9]{16,40}$/);

    await enqueue(queue, { payload: 1 });
    const before = Date.now();
    const [task] = await lease(queue, { session: session.hello.id, holder: "w1" });
    const stored = await row(task!.id);
    expect(stored.leaseHolder).toBe(`w1 @${session.hello.id}`);
    expect(stored.leaseExpiresAt! - before).toBeGreaterThanOrEqual(300_000);
    expect(stored.leaseExpiresAt! - before).toBeLessThan(305_000);

    // A ping is answered by the runtime.
    session.ws.send("ping");
    await until("the pong", () => session.messages.includes("pong"));
    session.ws.close(1000, "done");
  });

  it("a session closed past its timeout lapses its leases: the holder's ack is lease_lost, the task redelivered", async () => {
    const queue = uniqueQueue("sess");
    expect(
      (await call("PUT", `/v1/queues/${queue}/config`, { body: { backoff_base_s: 1, backoff_cap_s: 1 } })).status,
    ).toBe(200);
    const session = await openSession(queue);
    const [a, b, c] = (await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] })).map(
      (t) => t.id,
    );
    const held = await lease(queue, { session: session.hello.id, max: 2 });
    const plain = await lease(queue, { max: 1, holder: "w1" });
    expect(held.map((t) => t.id).sort()).toEqual([a, b].sort());
    expect(plain.map((t) => t.id)).toEqual([c]);

    session.ws.close(1000, "worker stopping");
    await until("the close noted", () => closedNoted(queue, session.hello.id));
    // Within its timeout nothing lapses.
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    expect(await row(a!)).toMatchObject({ state: "processing", leaseToken: held[0]!.lease_token });

    await age(queue, 31_000);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    for (const t of held) expect((await row(t.id)).leaseExpiresAt).toBeLessThanOrEqual(Date.now());
    expect(await closedNoted(queue, session.hello.id)).toBe(false);
    const late = await complete(queue, held[0]!.id, held[0]!.lease_token);
    expect(late.body.results[0]).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    // The plain lease is not the session's: untouched, and its holder completes it.
    expect((await complete(queue, c!, plain[0]!.lease_token)).body.results[0]).toMatchObject({ ok: true });
    // Redelivered once the expiry backoff (1 s) has passed, as an expired lease is.
    const again = await until("the lapsed tasks leased again", async () => {
      const tasks = await lease(queue, { max: 2, holder: "w2" });
      return tasks.length === 2 ? tasks : null;
    });
    expect(again.map((t) => t.id).sort()).toEqual([a, b].sort());
    expect(again.every((t) => t.attempts === 2)).toBe(true);
  });

  it("a reconnect with ?id= within the timeout resumes the session: its leases are kept", async () => {
    const queue = uniqueQueue("sess");
    const first = await openSession(queue);
    const [id] = (await enqueue(queue, { payload: 1 })).map((t) => t.id);
    const [task] = await lease(queue, { session: first.hello.id });
    first.ws.close(1001, "network blip");
    await until("the close noted", () => closedNoted(queue, first.hello.id));

    const second = await openSession(queue, `?id=${first.hello.id}`);
    expect(second.hello.id).toBe(first.hello.id);
    expect(await closedNoted(queue, first.hello.id)).toBe(false);
    await age(queue, 31_000);
    second.ws.send("ping");
    await until("the pong", () => second.messages.includes("pong"));
    await runDurableObjectAlarm(coordinator(queue));
    expect(second.closes).toEqual([]);
    expect((await complete(queue, id!, task!.lease_token)).body.results[0]).toMatchObject({
      ok: true,
      state: "completed",
    });
    second.ws.close(1000, "done");
  });

  it("a session with no ping for its timeout is closed (4000) and its leases lapse; a pinged one is kept", async () => {
    const queue = uniqueQueue("sess");
    const quiet = await openSession(queue, "?timeout_s=10");
    const pinged = await openSession(queue, "?timeout_s=10");
    await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }] });
    const [q] = await lease(queue, { session: quiet.hello.id });
    const [p] = await lease(queue, { session: pinged.hello.id });

    await age(queue, 11_000);
    pinged.ws.send("ping");
    await until("the pong", () => pinged.messages.includes("pong"));
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);

    await until("the quiet session closed", () => quiet.closes.length > 0);
    expect(quiet.closes[0]!.code).toBe(4000);
    expect((await row(q!.id)).leaseExpiresAt).toBeLessThanOrEqual(Date.now());
    expect((await complete(queue, q!.id, q!.lease_token)).body.results[0]).toMatchObject({
      ok: false,
      error: { code: "lease_lost" },
    });
    expect(pinged.closes).toEqual([]);
    expect((await complete(queue, p!.id, p!.lease_token)).body.results[0]).toMatchObject({ ok: true });
    // The alarm is kept while a session is open: at the pinged one's next possible timeout.
    const alarm = await inObject(coordinator(queue), (_i, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now());
    pinged.ws.close(1000, "done");
  });

  it("lapses a session's leases of tasks enqueued in one call (packs) as of tasks enqueued one by one (rows)", async () => {
    const queue = uniqueQueue("sess");
    const session = await openSession(queue);
    await enqueue(queue, { tasks: Array.from({ length: 20 }, (_, i) => ({ payload: i })) });
    await enqueue(queue, { payload: "single" });
    const held = await lease(queue, { session: session.hello.id, max: 21 });
    expect(held).toHaveLength(21);
    session.ws.close(1000, "crash");
    await until("the close noted", () => closedNoted(queue, session.hello.id));
    await age(queue, 31_000);
    await runDurableObjectAlarm(coordinator(queue));
    const res = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: { complete: held.map((t) => ({ id: t.id, lease_token: t.lease_token })) },
    });
    expect(res.body.results.map((r) => (r.ok ? "ok" : r.error?.code))).toEqual(held.map(() => "lease_lost"));
  });

  it("a cancel of a task a session holds tells the session to check: its extension answers task_cancelled", async () => {
    const queue = uniqueQueue("sess");
    const session = await openSession(queue);
    const [id] = (await enqueue(queue, { payload: 1 })).map((t) => t.id);
    const [task] = await lease(queue, { session: session.hello.id });
    expect((await call("POST", `/v1/tasks/${id}/cancel`)).status).toBe(200);
    await until("the session told to check", () => session.messages.some((m) => m === '{"type":"check"}'));
    const res = await call<{ results: Array<{ ok: boolean; error?: { code: string } }> }>(
      "POST",
      `/v1/queues/${queue}/extend`,
      { body: { leases: [{ id, lease_token: task!.lease_token }] } },
    );
    expect(res.body.results[0]).toMatchObject({ ok: false, error: { code: "task_cancelled" } });
    expect(await row(id!)).toMatchObject({ state: "cancelled" });
    session.ws.close(1000, "done");
  });

  it("refuses bad input with the one error shape, before any upgrade", async () => {
    const queue = uniqueQueue("sess");
    expectError(await call("GET", `/v1/queues/${queue}/session`), 400, "invalid_request", /Upgrade: websocket/);
    const upgrade = { headers: { Upgrade: "websocket" } };
    expectError(
      await call("GET", `/v1/queues/${queue}/session?timeout_s=1`, upgrade),
      400,
      "invalid_request",
      /timeout_s/,
    );
    expectError(
      await call("GET", `/v1/queues/${queue}/session?timeout_s=121`, upgrade),
      400,
      "invalid_request",
      /timeout_s/,
    );
    expectError(await call("GET", `/v1/queues/${queue}/session?id=short`, upgrade), 400, "invalid_request", /id/);
    expectError(await call("GET", `/v1/queues/${queue}/session`, { ...upgrade, token: null }), 401, "unauthorized");
    expectError(
      await call("POST", `/v1/queues/${queue}/lease`, { body: { session: "has spaces in it!!" } }),
      400,
      "invalid_request",
      /session/,
    );
  });
});
