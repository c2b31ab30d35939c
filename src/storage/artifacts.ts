import { EdgeqError } from "../contracts/errors";

/**
 * Task artifacts in R2, under `tasks/{id}/{name}`: the one module that knows the key layout, used by the
 * artifact routes (src/http/routes/artifacts.ts) and, through `taskArtifacts`, by processors.
 */

/** A stored artifact, as a processor's result and the artifact routes list it. */
export interface ArtifactInfo {
  name: string;
  content_type: string;
  size: number;
}

/** Artifact names: a file name, no paths, so `tasks/{id}/{name}` can never reach another task's files. */
export const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * The R2 key of a task's artifact; a name that is not a plain file name is a 400.
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

/**
 * Stores an artifact of a task; returns its name, content type and size.
 *
 * @example
 * await putArtifact(env.ARTIFACTS, taskId, "item-0001.mp3", bytes, "audio/mpeg");
 */
export async function putArtifact(
  bucket: R2Bucket,
  taskId: string,
  name: string,
  body: ArrayBuffer | Uint8Array | ReadableStream,
  contentType: string,
): Promise<ArtifactInfo> {
  const object = await bucket.put(artifactKey(taskId, name), body, { httpMetadata: { contentType } });
  return info(object);
}

/** The artifact's info, or null when it does not exist. */
export async function headArtifact(bucket: R2Bucket, taskId: string, name: string): Promise<ArtifactInfo | null> {
  const object = await bucket.head(artifactKey(taskId, name));
  return object ? info(object) : null;
}

/** The artifact with its body, or null when it does not exist. */
export function getArtifact(bucket: R2Bucket, taskId: string, name: string): Promise<R2ObjectBody | null> {
  return bucket.get(artifactKey(taskId, name));
}

/** Every artifact of a task (at most 1,000: one R2 list page; tasks make far fewer). */
export async function listArtifacts(bucket: R2Bucket, taskId: string): Promise<ArtifactInfo[]> {
  const listed = await bucket.list({ prefix: `tasks/${taskId}/`, include: ["httpMetadata"] });
  return listed.objects.map(info);
}

/** One task's artifacts, as a processor reaches them: it can touch no other task's files. */
export interface TaskArtifacts {
  /** Stores an artifact of this task (`tasks/{id}/{name}`). */
  put(name: string, body: ArrayBuffer | Uint8Array | ReadableStream, contentType: string): Promise<ArtifactInfo>;
  /** Whether an artifact of this task already exists (to resume without redoing work). */
  head(name: string): Promise<ArtifactInfo | null>;
}

/**
 * The artifacts of one task, bound to the bucket.
 *
 * @example
 * const artifacts = taskArtifacts(env.ARTIFACTS, task.id);
 * await artifacts.put("item-0001.mp3", bytes, "audio/mpeg");
 */
export function taskArtifacts(bucket: R2Bucket, taskId: string): TaskArtifacts {
  return {
    put: (name, body, contentType) => putArtifact(bucket, taskId, name, body, contentType),
    head: (name) => headArtifact(bucket, taskId, name),
  };
}
