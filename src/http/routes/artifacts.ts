import * as z from "zod";
import { ApiRoutes } from "../api-routes";
import { EdgeqError, NotFoundError } from "../../contracts/errors";
import { MAX_ARTIFACT_BYTES } from "../../contracts/limits";
import { ARTIFACT_NAME, getArtifact, listArtifacts, putArtifact } from "../../storage/artifacts";
import { onTaskShard } from "../../shards/task-locator";
import type { AppEnv } from "../app-env";
import { authRoute, jsonResponse } from "../route-helpers";
import { ArtifactListResponse, ArtifactSchema, TaskId } from "../../contracts/api";
import { validationHook } from "../validation";

const ArtifactParams = z.object({
  id: TaskId.meta({ param: { name: "id", in: "path" } }),
  name: z
    .string()
    .regex(ARTIFACT_NAME, "letters, digits, '.', '_' or '-', at most 128, starting with a letter or digit")
    .meta({ param: { name: "name", in: "path" }, example: "item-0001.mp3" }),
});

const binary = { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } };

const listRoute = authRoute({
  method: "get",
  path: "/v1/tasks/{id}/artifacts",
  tags: ["artifacts"],
  summary: "The task's artifacts (rendered audio, ...) with content type and size",
  request: { params: z.object({ id: ArtifactParams.shape.id }) },
  responses: { 200: jsonResponse(ArtifactListResponse) },
});

const getRoute = authRoute({
  method: "get",
  path: "/v1/tasks/{id}/artifacts/{name}",
  tags: ["artifacts"],
  summary: "Stream one artifact back, with its stored content type",
  request: { params: ArtifactParams },
  responses: {
    200: { description: "The artifact's bytes, served with the content type it was stored with", content: binary },
  },
});

const putRoute = authRoute({
  method: "put",
  path: "/v1/tasks/{id}/artifacts/{name}",
  tags: ["artifacts"],
  summary: "Upload an artifact of a leased task (header Edgeq-Lease-Token fences it; Content-Length required)",
  request: {
    params: ArtifactParams,
    headers: z.object({ "edgeq-lease-token": z.string().min(1).max(64) }),
    body: { required: true, content: binary },
  },
  responses: { 201: jsonResponse(ArtifactSchema, "Stored") },
});

/** Artifacts live in R2 under `tasks/{id}/{name}` (src/storage/artifacts.ts). */
export const artifactRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(listRoute, async (c) => {
    const { id } = c.req.valid("param");
    await onTaskShard(c.env, id, (shard) => shard.store.getTask(id)); // 404 for an unknown task, not an empty list
    return c.json({ artifacts: await listArtifacts(c.env.ARTIFACTS, id) }, 200);
  })
  .openapi(getRoute, async (c) => {
    const { id, name } = c.req.valid("param");
    const object = await getArtifact(c.env.ARTIFACTS, id, name);
    if (!object) throw new NotFoundError(`artifact ${name} of task ${id}`);
    return new Response(object.body, {
      status: 200,
      headers: {
        "Content-Type": object.httpMetadata?.contentType ?? "application/octet-stream",
        "Content-Length": String(object.size),
        ETag: object.httpEtag,
      },
    });
  })
  .openapi(putRoute, async (c) => {
    const { id, name } = c.req.valid("param");
    const token = c.req.valid("header")["edgeq-lease-token"];
    const length = Number(c.req.header("Content-Length"));
    if (!Number.isInteger(length) || length < 0) {
      throw new EdgeqError("invalid_request", "Content-Length: required (R2 stores bodies of known length)");
    }
    if (length > MAX_ARTIFACT_BYTES) {
      throw new EdgeqError("payload_too_large", `artifacts are limited to ${MAX_ARTIFACT_BYTES} bytes (got ${length})`);
    }
    await onTaskShard(c.env, id, (shard) => shard.store.assertLeaseHeld(id, token, c.var.now));
    const body = c.req.raw.body ?? new ReadableStream();
    const sized = body.pipeThrough(new FixedLengthStream(length));
    const contentType = c.req.header("Content-Type") ?? "application/octet-stream";
    try {
      return c.json(await putArtifact(c.env.ARTIFACTS, id, name, sized, contentType), 201);
    } catch (error) {
      // FixedLengthStream rejects a body shorter or longer than its Content-Length: the client's mistake
      // (or a dropped upload), and R2 keeps nothing of it.
      if (error instanceof TypeError || /length/i.test(String(error))) {
        throw new EdgeqError("invalid_request", `the body did not match Content-Length (${length} bytes)`);
      }
      throw error;
    }
  });
