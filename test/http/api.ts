import { exports } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { expect } from "vitest";
import { taskDb } from "../helpers";
import type { z } from "zod";
import type {
  AckResponse,
  EnqueueResponse,
  LeaseResponse,
  LeasedTaskSchema,
  OutcomeResponse,
  TaskSchema,
} from "../../src/contracts/api";

/** The token the test environment is configured with (vitest.config.ts). */
export const TOKEN = "test-token";
export const ORIGIN = "http://edgeq.test";

export type Task = z.infer<typeof TaskSchema>;
export type LeasedTask = z.infer<typeof LeasedTaskSchema>;
export type Enqueued = z.infer<typeof EnqueueResponse>;
export type Leased = z.infer<typeof LeaseResponse>;
export type Outcome = z.infer<typeof OutcomeResponse>;
export type AckResults = z.infer<typeof AckResponse>;
export interface ErrorBody {
  error: { code: string; message: string };
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  /** The parsed JSON body (null when the response is not JSON). */
  body: T;
  text: string;
}

export interface CallOptions {
  /** A JSON body (serialised), or a raw string or bytes sent as is. */
  body?: unknown;
  raw?: string | Uint8Array;
  /** null: no Authorization header. Default: the right token. */
  token?: string | null;
  /** Default application/json when a body is given; null: no Content-Type. */
  contentType?: string | null;
  headers?: Record<string, string>;
}

/** Builds the Request a client would send. */
export function request(method: string, path: string, opts: CallOptions = {}): Request {
  const headers = new Headers(opts.headers);
  const token = opts.token === undefined ? TOKEN : opts.token;
  if (token !== null) headers.set("Authorization", `Bearer ${token}`);
  const body = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const contentType =
    opts.contentType === undefined ? (body === undefined ? null : "application/json") : opts.contentType;
  if (contentType !== null) headers.set("Content-Type", contentType);
  return new Request(`${ORIGIN}${path}`, { method, headers, body });
}

/** Reads a response into status, headers and parsed body. */
export async function read<T>(res: Response): Promise<ApiResponse<T>> {
  const text = await res.text();
  const isJson = (res.headers.get("Content-Type") ?? "").includes("application/json");
  return { status: res.status, headers: res.headers, body: (isJson ? JSON.parse(text) : null) as T, text };
}

/** The Worker's default export (src/index.ts), typed through GlobalProps.mainModule in test/env.d.ts. */
const worker = exports.default;

/** Calls the deployed Worker's fetch handler and returns the raw Response (for binary bodies). */
export function send(method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  return worker.fetch(request(method, path, opts));
}

/** Calls the deployed Worker's fetch handler, as a client over HTTP would. */
export async function call<T = unknown>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
  return read<T>(await send(method, path, opts));
}

/** Asserts the one error shape: exactly `{ error: { code, message } }`, JSON, no stack trace. */
export function expectError(res: ApiResponse<unknown>, status: number, code: string, message?: string | RegExp): void {
  expect({ status: res.status, code: (res.body as ErrorBody | null)?.error?.code }).toEqual({ status, code });
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = res.body as ErrorBody;
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message"]);
  expect(typeof body.error.message).toBe("string");
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(res.text).not.toMatch(/\n\s+at |\.ts:\d+|node_modules|stack/i);
  if (message !== undefined) expect(body.error.message).toMatch(message);
}

export async function enqueue(queue: string, body: unknown): Promise<Enqueued["tasks"]> {
  const res = await call<Enqueued>("POST", `/v1/queues/${queue}/tasks`, { body });
  expect(res.status, res.text).toBe(201);
  return res.body.tasks;
}

/** Enqueues one task and returns its id. */
export async function enqueueOne(queue: string, task: Record<string, unknown> = {}): Promise<string> {
  const [created] = await enqueue(queue, task);
  return created!.id;
}

export async function lease(queue: string, body: Record<string, unknown> = {}): Promise<LeasedTask[]> {
  const res = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body });
  expect(res.status, res.text).toBe(200);
  return res.body.tasks;
}

/** Leases exactly one task and returns it. */
export async function leaseOne(queue: string, body: Record<string, unknown> = {}): Promise<LeasedTask> {
  const tasks = await lease(queue, { ...body, max: 1 });
  expect(tasks).toHaveLength(1);
  return tasks[0]!;
}

export async function getTask(id: string): Promise<Task> {
  const res = await call<Task>("GET", `/v1/tasks/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

export function complete(id: string, leaseToken: string, result?: unknown): Promise<ApiResponse<Outcome>> {
  return call<Outcome>("POST", `/v1/tasks/${id}/complete`, { body: { lease_token: leaseToken, result } });
}

export function fail(id: string, body: Record<string, unknown>): Promise<ApiResponse<Outcome>> {
  return call<Outcome>("POST", `/v1/tasks/${id}/fail`, { body });
}

/** Enqueues a task and drives it to dead (one attempt, failed permanently). */
export async function deadTask(queue: string, task: Record<string, unknown> = {}): Promise<string> {
  const id = await enqueueOne(queue, { ...task, max_attempts: 1 });
  const leased = await leaseOne(queue);
  expect(leased.id).toBe(id);
  const res = await fail(id, { lease_token: leased.lease_token, error: "boom" });
  expect(res.body).toMatchObject({ id, state: "dead" });
  return id;
}

/** Moves a lease's expiry into the past, as if its holder went silent (D1's clock cannot be faked). */
export async function expireLease(id: string): Promise<void> {
  await (await taskDb(id)).run(sql`UPDATE tasks SET lease_expires_at = ${Date.now() - 1000} WHERE id = ${id}`);
}

/** A syntactically valid ULID that names no task. */
export const MISSING_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

/** Matches an ISO-8601 UTC time as the API renders it. */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
