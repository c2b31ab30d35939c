import { EdgeqError, edgeqRpc, type EdgeqService } from "edgeq/rpc";

interface Env {
  EDGEQ: EdgeqService;
}

/** Waits this long for the task to finish before answering it as it stands (a push task takes well under). */
const WAIT_S = 20;

/**
 * Another Worker using edgeq through its service binding: `POST /` with `{"text": "..."}` enqueues a
 * text-stats task on the "transcripts" queue, waits for it to finish, and answers the task.
 */
export default {
  async fetch(request, env) {
    if (request.method !== "POST") {
      const error = { code: "method_not_allowed", message: 'POST a JSON body: {"text": "..."}' };
      return Response.json({ error }, { status: 405 });
    }
    const edgeq = edgeqRpc(env.EDGEQ);
    const { text } = await request.json<{ text?: unknown }>().catch(() => ({ text: undefined }));
    try {
      const { tasks } = await edgeq.enqueue("transcripts", { type: "text-stats", payload: { text } });
      const { task } = await edgeq.wait(tasks[0]!.id, { timeout_s: WAIT_S });
      return Response.json({ id: task.id, state: task.state, result: task.result });
    } catch (error) {
      // A refusal carries edgeq's error code and status: the same as the HTTP API answers.
      if (!(error instanceof EdgeqError)) throw error;
      const { code, message, status } = error;
      return Response.json({ error: { code, message } }, { status });
    }
  },
} satisfies ExportedHandler<Env>;
