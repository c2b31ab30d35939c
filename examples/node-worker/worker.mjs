import { Worker } from "edgeq/node";
import { z } from "zod";

// Works the "slugs" queue from Node: leases tasks over HTTP, runs them here, acks their results.
const worker = new Worker(
  "slugs",
  async (task, ctx) => {
    await ctx.progress(50, "slugifying");
    const plain = task.payload.title.normalize("NFKD").replace(/[\u0300-\u036f]/g, ""); // accents off
    return {
      slug: plain
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-+|-+$/g, ""),
    };
  },
  {
    url: process.env.EDGEQ_URL ?? "http://127.0.0.1:8787",
    token: process.env.EDGEQ_TOKEN ?? "example-dev-token",
    concurrency: 4,
    schema: z.object({ title: z.string().min(1).max(500) }), // a payload that fails it is dead at once
  },
);
worker.on("completed", (task, result) => console.log(`completed ${task.id}`, JSON.stringify(result)));
worker.on("failed", (task, error) => console.log(`failed ${task.id}: ${error}`)); // error: the message
await worker.run(); // until SIGINT/SIGTERM: running tasks finish, the rest is handed back
