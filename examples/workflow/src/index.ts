import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { edgeqRpc, type EdgeqService } from "edgeq/rpc";

interface Env {
  EDGEQ: EdgeqService;
  STATS_OF_CHAPTERS: Workflow<Chapters>;
}

/** A book's chapters: each becomes one edgeq task (text-stats, run by the queue-worker example). */
interface Chapters {
  chapters: string[];
}

/** What one chapter's task answers. */
interface ChapterStats {
  words: number;
  reading_s: number;
}

const QUEUE = "transcripts";

/** Crockford base32, the alphabet of a ULID. */
const ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A fresh ULID: edgeq takes a caller's own task ids when they are ULIDs. */
function ulid(now: number): string {
  let time = "";
  for (let t = now, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = ULID_ALPHABET[t % 32] + time;
  const random = crypto.getRandomValues(new Uint8Array(16));
  return time + Array.from(random, (b) => ULID_ALPHABET[b % 32]).join("");
}

/**
 * A Workflow that fans a book's chapters out to edgeq and joins their results. Each step holds up under the
 * Workflow's own retries (a step is retried when it throws, or when the instance is restarted mid-step):
 *
 * 1. `name the tasks` makes the tasks' ids. Its output is persisted, so every later attempt uses these ids.
 * 2. `fan out` enqueues them with those ids in one call: retried after the enqueue went through, edgeq
 *    answers the same tasks `deduplicated`, so a retry never makes a second set.
 * 3. `join` waits on the binding for each task (`wait`: answered as soon as it finishes, up to 20 s a call)
 *    and throws while any is unfinished, so the Workflow's retry policy is the outer loop. Waiting writes
 *    nothing, so a retried join only asks again.
 */
export class StatsOfChapters extends WorkflowEntrypoint<Env, Chapters> {
  override async run(event: WorkflowEvent<Chapters>, step: WorkflowStep) {
    const { chapters } = event.payload;
    const ids = await step.do("name the tasks", async () => chapters.map(() => ulid(Date.now())));
    await step.do("fan out", async () => {
      const tasks = chapters.map((text, i) => ({ id: ids[i]!, type: "text-stats", payload: { text } }));
      await edgeqRpc(this.env.EDGEQ).enqueue(QUEUE, { tasks });
    });
    const stats = await step.do(
      "join",
      { retries: { limit: 30, delay: "1 second", backoff: "constant" }, timeout: "2 minutes" },
      async () => {
        const edgeq = edgeqRpc(this.env.EDGEQ);
        const results: ChapterStats[] = [];
        for (const id of ids) {
          const { finished, task } = await edgeq.wait(id, { timeout_s: 20 });
          if (!finished) throw new Error(`task ${id} is ${task.state}: not finished yet`);
          if (task.state !== "completed") throw new Error(`task ${id} ended ${task.state}`);
          results.push(task.result as unknown as ChapterStats);
        }
        return results;
      },
    );
    return {
      chapters: stats.length,
      words: stats.reduce((n, s) => n + s.words, 0),
      reading_s: stats.reduce((n, s) => n + s.reading_s, 0),
    };
  }
}

/** Starts a book's Workflow (POST /books) and reports its status (GET /books/{id}). */
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/setup") {
      return Response.json(await edgeqRpc(env.EDGEQ).configure(QUEUE, { mode: "push" }));
    }
    if (request.method === "POST" && url.pathname === "/books") {
      const instance = await env.STATS_OF_CHAPTERS.create({ params: await request.json<Chapters>() });
      return Response.json({ id: instance.id }, { status: 202 });
    }
    const id = /^\/books\/([^/]+)$/.exec(url.pathname)?.[1];
    if (request.method === "GET" && id) {
      const status = await (await env.STATS_OF_CHAPTERS.get(id)).status();
      return Response.json({ status: status.status, output: status.output ?? null, error: status.error ?? null });
    }
    return Response.json({ error: "not found" }, { status: 404 });
  },
} satisfies ExportedHandler<Env>;
