import { createEdgeq, type Env, type Processor } from "edgeq";
import { dashboard } from "edgeq/dashboard";
import { z } from "zod";

/** A processor of your own: counts a transcript's words and estimates how long it takes to read aloud. */
const textStats: Processor<{ text: string; wpm: number }> = {
  type: "text-stats",
  payload: z.object({ text: z.string().min(1).max(100_000), wpm: z.number().int().min(60).max(400).default(180) }),
  async run({ text, wpm }, ctx) {
    await ctx.progress(50, "counting words");
    const words = text.split(/\s+/).filter(Boolean).length;
    return { words, reading_s: Math.round((words / wpm) * 60) };
  },
};

// The dashboard at /dashboard; edgeq/sqs and edgeq/reference (/docs) are opt-in too, bundled only if passed.
const edgeq = createEdgeq({ processors: [textStats], dashboard });

// The Durable Object classes wrangler.toml binds, and the RPC entrypoint other Workers bind.
export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;
export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled } satisfies ExportedHandler<Env>;
