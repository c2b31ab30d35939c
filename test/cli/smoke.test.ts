import { inject, expect, it } from "vitest";

it("the test server answers /health", async () => {
  const res = await fetch(`${inject("edgeqUrl")}/health`);
  expect(await res.json()).toEqual({ status: "ok" });
});
