import { z } from "zod";
import type { Processor } from "./types";

/**
 * Your own processors: add one to this list (one file), deploy, and set a push queue's `processor` to its
 * type — or enqueue tasks whose `type` is its type. `echo` is a working example: it returns its payload.
 */
const echo: Processor<{ text: string }> = {
  type: "echo",
  payload: z.object({ text: z.string().max(10_000) }),
  engine: () => ({ name: "built-in", available: true }),
  async run(payload, ctx) {
    await ctx.progress(50, "echoing");
    return { text: payload.text };
  },
};

export const customProcessors: Processor[] = [echo];
