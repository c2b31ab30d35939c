import { dependencyPageView } from "../../contracts/dependency-page";
import * as z from "zod";
import {
  CompleteBody,
  DependenciesResponse,
  DependencyPageQuery,
  DependentsResponse,
  FailBody,
  HeartbeatBody,
  OutcomeResponse,
  ReleaseBody,
  TaskParams,
} from "../../contracts/api";
import { TaskSchema } from "../../contracts/task";
import type { AckOutcome } from "../../engine/store";
import { toTaskView } from "../../contracts/task-view";
import { toIso } from "../../contracts/time";
import { ackTask } from "../ack";
import { WaitQuery, WaitResponse } from "../../contracts/wait";
import { cancel, heartbeat, readDependencies, readDependents, readTask, retry } from "../task";
import { waitForTask } from "../wait";
import { defineOperation, jsonInput, queryInput } from "./define";

/** The API's operations on one task, by id (`/v1/tasks/{id}/…`; RPC `get(id)`, `fail(id, body)`, …). */

/**
 * The answer to one holder write on one task (complete, fail, release): the outcome, or its error thrown
 * for the caller's error model.
 */
function outcomeAnswer(outcome: AckOutcome) {
  if (!outcome.ok) throw outcome.error;
  return {
    id: outcome.id,
    state: outcome.state,
    run_at: outcome.state === "pending" ? toIso(outcome.run_at) : null,
    children: outcome.children.map((child) => child.id),
    repeated: outcome.repeated,
  };
}

const HeartbeatResponse = z.object({
  id: z.string(),
  lease_expires_at: z.string(),
  progress: z.number().int().nullable(),
  progress_message: z.string().nullable(),
});

export const taskApi = {
  /** A page of a task's dependencies, each with its state and result (inline up to 16 KiB). */
  dependencies: defineOperation({
    params: TaskParams,
    input: queryInput(DependencyPageQuery),
    answer: DependenciesResponse,
    run: async (op, { id }, page) => dependencyPageView(await readDependencies(op, id, page)),
  }),

  /** A page of the tasks that depend on a task. */
  dependents: defineOperation({
    params: TaskParams,
    input: queryInput(DependencyPageQuery),
    answer: DependentsResponse,
    run: async (op, { id }, page) => {
      const { entries, nextCursor } = await readDependents(op, id, page);
      return { dependents: entries, next_cursor: nextCursor };
    },
  }),

  /** A task with its payload, result, error history and progress. */
  get: defineOperation({
    params: TaskParams,
    input: undefined,
    answer: TaskSchema,
    run: async (op, { id }) => toTaskView(await readTask(op, id)),
  }),

  /** Completes a leased task (fenced by its lease token). */
  complete: defineOperation({
    params: TaskParams,
    input: jsonInput(CompleteBody),
    answer: OutcomeResponse,
    run: async (op, { id }, body) =>
      outcomeAnswer(await ackTask(op, "complete", { id, leaseToken: body.lease_token, result: body.result })),
  }),

  /** Fails a leased task: retried after backoff (or retry_after_s), or dead when permanent or exhausted. */
  fail: defineOperation({
    params: TaskParams,
    input: jsonInput(FailBody),
    answer: OutcomeResponse,
    run: async (op, { id }, body) =>
      outcomeAnswer(
        await ackTask(op, "fail", {
          id,
          leaseToken: body.lease_token,
          message: body.error,
          retryable: body.retryable,
          retryAfterS: body.retry_after_s,
        }),
      ),
  }),

  /** Hands a leased task back unfinished: pending at once, the attempt not counted. */
  release: defineOperation({
    params: TaskParams,
    input: jsonInput(ReleaseBody),
    answer: OutcomeResponse,
    run: async (op, { id }, body) => outcomeAnswer(await ackTask(op, "release", { id, leaseToken: body.lease_token })),
  }),

  /** Extends a lease and records progress or a checkpoint; `task_cancelled` tells the holder to stop. */
  heartbeat: defineOperation({
    params: TaskParams,
    input: jsonInput(HeartbeatBody),
    answer: HeartbeatResponse,
    run: async (op, { id }, body) => {
      const row = await heartbeat(op, {
        id,
        leaseToken: body.lease_token,
        extendS: body.extend_s,
        progress: body.progress,
        progressMessage: body.message,
        checkpoint: body.checkpoint,
      });
      return {
        id: row.id,
        lease_expires_at: toIso(row.leaseExpiresAt ?? op.now),
        progress: row.progress,
        progress_message: row.progressMessage,
      };
    },
  }),

  /** Cancels a pending task at once, a processing one when its holder next writes. */
  cancel: defineOperation({
    params: TaskParams,
    input: undefined,
    answer: TaskSchema,
    run: async (op, { id }) => toTaskView(await cancel(op, id)),
  }),

  /** Puts a dead or cancelled task back to pending now, attempts reset. */
  retry: defineOperation({
    params: TaskParams,
    input: undefined,
    answer: TaskSchema,
    run: async (op, { id }) => toTaskView(await retry(op, id)),
  }),

  /** Waits up to `timeout_s` for the task to finish: its view, and whether it is finished. */
  wait: defineOperation({
    params: TaskParams,
    input: queryInput(WaitQuery),
    answer: WaitResponse,
    run: async (op, { id }, { timeout_s }) => {
      const { finished, row } = await waitForTask(op, id, Math.round(timeout_s * 1000));
      return { finished, task: toTaskView(row) };
    },
  }),
};
