import { Worker } from "edgeq/node";

// A worker outside Cloudflare, on edgeq's Node SDK: leases the "drafts" queue's tasks over HTTP, runs each
// here, and acks its result (or its error, retried with backoff). `npm run worker` takes EDGEQ_TOKEN from
// .dev.vars; EDGEQ_URL and EDGEQ_TOKEN point it at a deployed edgeq.
const worker = new Worker(
  "drafts",
  async (task, ctx) => {
    await ctx.progress(50, "counting");
    const text = String(task.payload?.text ?? "");
    return { chars: text.length, words: text.split(/\s+/).filter(Boolean).length };
  },
  { url: process.env.EDGEQ_URL ?? "http://localhost:8787", token: process.env.EDGEQ_TOKEN, concurrency: 4 },
);
worker.on("completed", (task, result) => console.log(`completed ${task.id}`, JSON.stringify(result)));
worker.on("failed", (task, error) => console.log(`failed ${task.id}: ${error}`)); // error: the message
await worker.run(); // until Ctrl-C: running tasks finish, the rest is handed back
