import { expectOk, type Client } from "../client";
import type { CliConfig } from "../config";
import { CliError, EXIT } from "../errors";
import type { ArtifactInfo, LeasedTask } from "./types";

/** Ack and heartbeat requests give up after this long: a hung request must not hold a task (or a
 * stopping worker) forever, and a heartbeat answered later than a lease lasts is useless anyway. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Beyond the long poll's own wait: time for the server to answer once the wait is over. A lease request
 * that has not answered by then is treated as a lost connection. */
const LEASE_GRACE_MS = 15_000;

/** Largest upload in one request (the API's MAX_ARTIFACT_BYTES, 100 MiB) takes minutes on a slow link;
 * past 10 minutes something is wrong and the task should fail (and be retried) instead of hanging. */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;

/** One item of a batch ack. */
export type AckItem =
  | { kind: "complete"; id: string; lease_token: string; result: unknown }
  | { kind: "fail"; id: string; lease_token: string; error: string; retryable: boolean; retry_after_s?: number }
  | { kind: "release"; id: string; lease_token: string };

/** The server's answer for one ack item. */
export type AckResult = { ok: true; state: string } | { ok: false; code: string; message: string };

/** A heartbeat's update: progress (0-100), a message, a checkpoint. */
export interface HeartbeatUpdate {
  progress?: number;
  message?: string;
  checkpoint?: unknown;
}

/**
 * True for failures worth retrying: the server unreachable, overloaded (429) or failing (5xx). Anything
 * else (a bad token, an invalid request) will not get better by asking again.
 */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof CliError)) return false;
  if (error.exitCode === EXIT.unreachable) return true;
  const code = error.code ?? "";
  return code === "rate_limited" || code === "internal" || code === "not_configured" || /^http_5\d\d$/.test(code);
}

/** The worker's calls to the API, through the typed client (the artifact upload excepted, see there). */
export class WorkerApi {
  constructor(
    private readonly client: Client,
    private readonly config: CliConfig,
    private readonly queue: string,
  ) {}

  /** Leases up to `max` tasks, waiting up to `waitS` (long poll) when none is due; `signal` aborts it. */
  async lease(
    opts: { max: number; waitS: number; visibilityS: number; holder: string },
    signal: AbortSignal,
  ): Promise<LeasedTask[]> {
    const timeout = AbortSignal.timeout(opts.waitS * 1000 + LEASE_GRACE_MS);
    const response = await this.client.v1.queues[":queue"].lease.$post(
      {
        param: { queue: this.queue },
        json: { max: opts.max, wait_s: opts.waitS, visibility_timeout_s: opts.visibilityS, holder: opts.holder },
      },
      { init: { signal: AbortSignal.any([signal, timeout]) } },
    );
    return (await expectOk(response)).tasks;
  }

  /**
   * Claims (and extends to `visibilityS`) leases a long poll handed out after it waited (`claim_by` set):
   * unclaimed, the server takes them back within seconds. Returns the ids whose claim succeeded.
   */
  async claim(tasks: LeasedTask[], visibilityS: number): Promise<Set<string>> {
    const response = await this.client.v1.queues[":queue"].extend.$post(
      {
        param: { queue: this.queue },
        json: {
          leases: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
          visibility_timeout_s: visibilityS,
        },
      },
      { init: { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) } },
    );
    const { results } = await expectOk(response);
    return new Set(results.filter((r) => r.ok).map((r) => r.id));
  }

  /** Extends a task's lease by `extendS` seconds, recording the update. */
  async heartbeat(task: LeasedTask, extendS: number, update: HeartbeatUpdate): Promise<void> {
    const response = await this.client.v1.tasks[":id"].heartbeat.$post(
      { param: { id: task.id }, json: { lease_token: task.lease_token, extend_s: extendS, ...update } },
      { init: { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) } },
    );
    await expectOk(response);
  }

  /** Completes, fails and releases up to MAX_BATCH tasks in one request; one result per item, in order. */
  async ack(items: AckItem[]): Promise<AckResult[]> {
    const json = {
      complete: [] as Array<{ id: string; lease_token: string; result: unknown }>,
      fail: [] as Array<{ id: string; lease_token: string; error: string; retryable: boolean; retry_after_s?: number }>,
      release: [] as Array<{ id: string; lease_token: string }>,
    };
    for (const { kind, ...item } of items) {
      if (kind === "complete") json.complete.push(item as (typeof json.complete)[number]);
      else if (kind === "fail") json.fail.push(item as (typeof json.fail)[number]);
      else json.release.push(item);
    }
    const response = await this.client.v1.queues[":queue"].ack.$post(
      { param: { queue: this.queue }, json },
      { init: { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) } },
    );
    const { results } = await expectOk(response);
    const byId = new Map(results.map((r) => [r.id, r]));
    return items.map((item): AckResult => {
      const r = byId.get(item.id);
      if (!r) return { ok: false, code: "missing", message: "the server returned no result for this task" };
      if (r.ok) return { ok: true, state: r.state ?? "unknown" };
      return { ok: false, code: r.error?.code ?? "unknown", message: r.error?.message ?? "" };
    });
  }

  /** The task's stored artifacts. */
  async listArtifacts(task: LeasedTask): Promise<ArtifactInfo[]> {
    const response = await this.client.v1.tasks[":id"].artifacts.$get(
      { param: { id: task.id } },
      { init: { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) } },
    );
    return (await expectOk(response)).artifacts;
  }

  /** Uploads an artifact, fenced by the task's lease token. */
  async putArtifact(
    task: LeasedTask,
    name: string,
    bytes: Uint8Array,
    contentType: string,
    signal: AbortSignal,
  ): Promise<ArtifactInfo> {
    // Plain fetch, not the typed client: hono/client sends JSON, form or text bodies, not raw bytes. Same
    // base URL and token; fetch sets Content-Length from the Uint8Array, which the API requires.
    const url = `${this.config.url}/v1/tasks/${encodeURIComponent(task.id)}/artifacts/${encodeURIComponent(name)}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: "PUT",
        headers: {
          Authorization: `Bearer ${this.config.token}`,
          "Edgeq-Lease-Token": task.lease_token,
          "Content-Type": contentType,
        },
        body: bytes,
        signal: AbortSignal.any([signal, AbortSignal.timeout(UPLOAD_TIMEOUT_MS)]),
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new CliError(`cannot upload ${name} to ${this.config.url}: ${(error as Error).message}`, EXIT.unreachable);
    }
    return expectOk<ArtifactInfo>(response);
  }
}
