import { EdgeqError, edgeqRpc, type EdgeqService } from "edgeq/rpc";

interface Env {
  EDGEQ: EdgeqService;
}

/** A producer: takes transcripts, hands them to edgeq through the RPC binding, reports their outcome. */
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const edgeq = edgeqRpc(env.EDGEQ);
    try {
      if (request.method === "POST" && url.pathname === "/setup") {
        return Response.json(await edgeq.configure("transcripts", { mode: "push" }));
      }
      if (request.method === "POST" && url.pathname === "/transcripts") {
        const { text } = await request.json<{ text: string }>();
        const { tasks } = await edgeq.enqueue("transcripts", { type: "text-stats", payload: { text } });
        return Response.json({ id: tasks[0]!.id }, { status: 202 });
      }
      const id = /^\/transcripts\/([^/]+)$/.exec(url.pathname)?.[1];
      if (request.method === "GET" && id) {
        const task = await edgeq.get(id);
        return Response.json({ state: task.state, result: task.result, errors: task.errors });
      }
      return Response.json({ error: "not found" }, { status: 404 });
    } catch (error) {
      // A refusal carries edgeq's error code and status, the same as the HTTP API's.
      if (!(error instanceof EdgeqError)) throw error;
      const { code, message, status } = error;
      return Response.json({ error: { code, message } }, { status });
    }
  },
} satisfies ExportedHandler<Env>;
