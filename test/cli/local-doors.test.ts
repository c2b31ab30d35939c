import { describe, expect, inject, it } from "vitest";
import { fireTick } from "../../scripts/cron-driver.mjs";
import { doorAnswers, localDoors } from "./local-doors";
import { api, edgeqUrl, enqueue, getTask, uniqueQueue } from "./worker-support";

/** The local server as `npm start` runs it (scripts/wrangler-dev.mjs, the same launcher; this project's has
 * a token of its own): nothing but /health, the docs and the dashboard's page answers without the token. */
describe("the local server's doors around the token", () => {
  it("answers none of wrangler's own routes without the token: no Local Explorer, no scheduled or email trigger", async () => {
    const doors = localDoors();
    expect(await doorAnswers(edgeqUrl())).toEqual(doors.map((door) => `${door.what}: refused`));
  });

  it("lets no refused scheduled event run the tick with the clock it sent: a held lease stays held", async () => {
    const queue = uniqueQueue("doors");
    const [id] = await enqueue(queue, [{}]);
    await api("POST", `/v1/queues/${queue}/lease`, { max: 1, visibility_timeout_s: 600 });
    const held = await getTask(id!);
    expect(held.state).toBe("processing");
    // Each carries a clock a day ahead: a tick run with it would reap the lease at once.
    await doorAnswers(edgeqUrl());
    await fireTick(edgeqUrl(), inject("edgeqToken"));
    const after = await getTask(id!);
    expect([after.state, after.attempts, after.lease_expires_at]).toEqual(["processing", 1, held.lease_expires_at]);
  });

  it("runs the tick on POST /__tick with the token, answering what it did", async () => {
    const result = await fireTick(edgeqUrl(), inject("edgeqToken"));
    expect(result).toMatchObject({ reaped: expect.any(Number), pruned: expect.any(Number), woken: expect.any(Array) });
    const wrongToken = await fetch(`${edgeqUrl()}/__tick`, {
      method: "POST",
      headers: { Authorization: "Bearer not-the-token" },
    });
    expect(wrongToken.status).toBe(401);
  });
});
