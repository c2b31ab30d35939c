import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgeqError } from "../../../src/contracts/errors";
import { openDb } from "../../../src/db/client";
import type { NewTask } from "../../../src/engine/enqueue";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";

// The pack store implements the core of the port only (docs/design/packs.md): a task naming a capability it
// does not keep yet is refused, naming the field, and nothing is stored — never stored without it.
describe("pack store: capabilities not built yet are refused, not dropped", () => {
  const cases: Array<[string, NewTask]> = [
    ["then", { then: [{ type: "next" }] }],
    ["key", { key: "tenant-1" }],
    ["depends_on", { dependsOn: ["01KDZ0000000000000000000AA"] }],
    ["start_by", { startBy: T0 + 60_000 }],
    ["idempotency", { unique: { mode: "idempotency", key: "k", windowMs: 60_000 } }],
  ];
  for (const [field, task] of cases) {
    it(`a task with ${field}`, async () => {
      const store = packTaskStore(openDb(env.DB));
      const queue = uniqueQueue("not-yet");
      const error = await store.enqueueTasks(queue, [{}, task], T0).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EdgeqError);
      expect((error as EdgeqError).code).toBe("invalid_request");
      expect((error as EdgeqError).message).toContain(`tasks[1].${field}`);
      expect((await store.listTasks(queue, { limit: 10 })).tasks).toEqual([]);
    });
  }
});
