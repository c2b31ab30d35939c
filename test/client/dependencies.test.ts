import { describe, expect, it } from "vitest";
import { EdgeqClient } from "../../src/client/index";
import type { DependencyPage, EnqueueInput } from "../../src/client/index";
import { queueOn } from "../shards/support";
import { workerFetch } from "./worker-fetch";

// edgeq/client's dependencies: a fan-out with its join, `depends_on`, and the two reads, against the real Worker.

const client = () => new EdgeqClient({ url: "http://edgeq.test", token: "test-token", fetch: workerFetch().fetch });

describe("edgeq/client and dependencies", () => {
  it("enqueues a fan-out with its join and a task after it; reads dependencies and dependents page by page", async () => {
    const edgeq = client();
    const queue = queueOn("DB", "client-deps");
    const fanOut: EnqueueInput = {
      tasks: [
        { type: "part", payload: 1 },
        { type: "part", payload: 2 },
      ],
      join: { type: "stitch", on_dependency_failure: "continue" },
    };
    const answer = await edgeq.enqueue(queue, fanOut);
    const join = answer.join!;
    expect(join.state).toBe("waiting");
    const after = await edgeq.enqueue(queue, { type: "after", depends_on: [join.id], on_dependency_failure: "cancel" });
    expect(after.tasks[0]!.state).toBe("waiting");

    const first: DependencyPage = await edgeq.dependencies(join.id, { limit: 1 });
    expect(first.dependencies).toHaveLength(1);
    const second = await edgeq.dependencies(join.id, { limit: 1, cursor: first.next_cursor! });
    expect([...first.dependencies, ...second.dependencies].map((d) => d.id).sort()).toEqual(
      answer.tasks.map((t) => t.id).sort(),
    );
    expect(second.dependencies[0]).toMatchObject({ queue, type: "part", state: "pending", result: null });

    const { dependents, next_cursor } = await edgeq.dependents(join.id);
    expect(dependents).toEqual([{ id: after.tasks[0]!.id, queue, type: "after", state: "waiting", outcome: null }]);
    expect(next_cursor).toBeNull();
  });
});
