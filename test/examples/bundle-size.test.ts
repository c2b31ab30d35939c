import { expect, it } from "vitest";
import { CORE_GZIP_BUDGET, measureAll } from "../../scripts/bundle-size.mjs";

/**
 * What a Worker embedding edgeq bundles, from the library as packed (dist/lib: `npm run examples` builds it
 * first), as `npm run size` measures it: the core within its budget, and each opt-in part (edgeq/dashboard,
 * edgeq/sqs, edgeq/reference) bundled only by a Worker that passes it.
 */
it("a core-only Worker stays within its gzip budget, and leaves out the parts it does not pass", async () => {
  const sizes = await measureAll();
  const core = sizes["core"]!;
  expect(core.gzip, JSON.stringify(sizes)).toBeLessThanOrEqual(CORE_GZIP_BUDGET);
  // Each part adds its own code: were it in the core already, the Worker passing it would be no larger.
  for (const part of ["dashboard", "sqs", "reference"]) {
    expect(sizes[`core + ${part}`]!.bytes - core.bytes, part).toBeGreaterThan(10_000);
  }
  // The reference brings @hono/zod-openapi and zod's whole namespace: the core must not.
  expect(sizes["core + reference"]!.bytes - core.bytes).toBeGreaterThan(300_000);
});
