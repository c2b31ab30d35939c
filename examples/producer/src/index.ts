import { edgeqErrorOf, type EdgeqService } from "edgeq";

interface Env {
  EDGEQ: EdgeqService;
}

/** A producer: takes transcripts, hands them to edgeq through the RPC binding, reports their outcome. */
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    try {
      if (request.method === "POST" && url.pathname === "/setup") {
        return Response.json(await env.EDGEQ.configure("transcripts", { mode: "push" }));
      }
      if (request.method === "POST" && url.pathname === "/transcripts") {
        const { text } = await request.json<{ text: string }>();
        const { tasks } = await env.EDGEQ.enqueue("transcripts", { type: "text-stats", payload: { text } });
        return Response.json({ id: tasks[0]!.id }, { status: 202 });
      }
      const id = /^\/transcripts\/([^/]+)$/.exec(url.pathname)?.[1];
      if (request.method === "GET" && id) {
        const task = await env.EDGEQ.get(id);
        return Response.json({ state: task.state, result: task.result, errors: task.errors });
      }
      return Response.json({ error: "not found" }, { status: 404 });
    } catch (error) {
      // A refusal carries edgeq's error code, the same as the HTTP API's.
      const refused = edgeqErrorOf(error);
      if (!refused) throw error;
      const { code, message } = refused;
      return Response.json({ error: { code, message } }, { status: code === "not_found" ? 404 : 400 });
    }
  },
} satisfies ExportedHandler<Env>;
