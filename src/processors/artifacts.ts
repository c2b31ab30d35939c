import { EdgeqError } from "../engine/errors";
import type { ArtifactInfo } from "./types";

/** Artifact names: a file name, no paths, so `tasks/{id}/{name}` can never reach another task's files. */
export const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Largest artifact uploaded through the API: 100 MiB, the request body limit of Workers on most plans. */
export const MAX_ARTIFACT_BYTES = 100 * 1024 * 1024;

/**
 * The R2 key of a task's artifact.
 *
 * @example
 * artifactKey("01J...", "item-0001.mp3"); // "tasks/01J.../item-0001.mp3"
 */
export function artifactKey(taskId: string, name: string): string {
  if (!ARTIFACT_NAME.test(name)) {
    throw new EdgeqError("invalid_request", `artifact name "${name}": letters, digits, '.', '_' or '-', at most 128`);
  }
  return `tasks/${taskId}/${name}`;
}

function info(object: R2Object): ArtifactInfo {
  return {
    name: object.key.slice(object.key.lastIndexOf("/") + 1),
    content_type: object.httpMetadata?.contentType ?? "application/octet-stream",
    size: object.size,
  };
}

/** Stores an artifact; returns its name, content type and size. */
export async function putArtifact(
  bucket: R2Bucket,
  key: string,
  body: ArrayBuffer | Uint8Array | ReadableStream,
  contentType: string,
): Promise<ArtifactInfo> {
  const object = await bucket.put(key, body, { httpMetadata: { contentType } });
  return info(object);
}

/** The artifact's info, or null when it does not exist. */
export async function headArtifact(bucket: R2Bucket, key: string): Promise<ArtifactInfo | null> {
  const object = await bucket.head(key);
  return object ? info(object) : null;
}

/** Every artifact of a task (at most 1,000: one R2 list page; tasks make far fewer). */
export async function listArtifacts(bucket: R2Bucket, taskId: string): Promise<ArtifactInfo[]> {
  const listed = await bucket.list({ prefix: `tasks/${taskId}/`, include: ["httpMetadata"] });
  return listed.objects.map(info);
}
