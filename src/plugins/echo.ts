import * as z from "zod";
import type { Processor } from "../processors/types";

/**
 * `echo`: returns its payload's text, after recording 50 % progress. The smallest working processor, and
 * the example of one: pass yours beside it to createEdgeq, as this repository's src/index.ts does.
 */
export const echoProcessor: Processor<{ text: string }> = {
  type: "echo",
  payload: z.object({ text: z.string().max(10_000) }),
  engine: () => ({ name: "built-in", available: true }),
  async run(payload, ctx) {
    await ctx.progress(50, "echoing");
    return { text: payload.text };
  },
};
