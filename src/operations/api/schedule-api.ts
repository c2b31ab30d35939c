import * as z from "zod";
import {
  ScheduleBody,
  ScheduleListResponse,
  ScheduleParams,
  ScheduleView,
  TriggerResponse,
} from "../../schedules/schedule-schemas";
import { scheduleView } from "../../schedules/schedule-service";
import { deleteSchedule, getSchedule, listSchedules, type ScheduleRow } from "../../schedules/schedule-store";
import { homeShard } from "../../shards/shard-set";
import { shardedTaskStore } from "../../shards/task-store";
import type { OperationContext } from "../context";
import { saveSchedule, setSchedulePaused, triggerScheduleNow } from "../schedule";
import { defineOperation, jsonInput } from "./define";

/** The API's operations on schedules (`/v1/schedules/{name}`; RPC `putSchedule(name, body)`, …). */

/** A schedule as the API shows it: its next 5 fire times and its last run's task and state. */
function viewOf(op: OperationContext, row: ScheduleRow) {
  return scheduleView(homeShard(op.env).db, row, op.now, shardedTaskStore(op.env));
}

export const scheduleApi = {
  /** Creates or replaces a schedule; an active one is armed before this answers. */
  put: defineOperation({
    params: ScheduleParams,
    input: jsonInput(ScheduleBody),
    answer: ScheduleView,
    run: async (op, { name }, body) => viewOf(op, await saveSchedule(op, name, body)),
  }),

  /** A schedule with its next 5 fire times and its last run. */
  get: defineOperation({
    params: ScheduleParams,
    input: undefined,
    answer: ScheduleView,
    run: async (op, { name }) => viewOf(op, await getSchedule(homeShard(op.env).db, name)),
  }),

  /** Every schedule, by name. */
  all: defineOperation({
    params: undefined,
    input: undefined,
    answer: ScheduleListResponse,
    run: async (op) => {
      const rows = await listSchedules(homeShard(op.env).db);
      return { schedules: await Promise.all(rows.map((row) => viewOf(op, row))) };
    },
  }),

  /** Deletes a schedule; the tasks it enqueued stay. */
  delete: defineOperation({
    params: ScheduleParams,
    input: undefined,
    answer: z.object({ deleted: z.string() }),
    run: async (op, { name }) => {
      await deleteSchedule(homeShard(op.env).db, name);
      return { deleted: name };
    },
  }),

  /** Pauses a schedule: no slot fires until it is resumed. */
  pause: defineOperation({
    params: ScheduleParams,
    input: undefined,
    answer: ScheduleView,
    run: async (op, { name }) => viewOf(op, await setSchedulePaused(op, name, true)),
  }),

  /** Resumes a schedule from its first slot after now (missed slots are not fired). */
  resume: defineOperation({
    params: ScheduleParams,
    input: undefined,
    answer: ScheduleView,
    run: async (op, { name }) => viewOf(op, await setSchedulePaused(op, name, false)),
  }),

  /** Runs a schedule now: enqueues its task once, outside its slots. */
  trigger: defineOperation({
    params: ScheduleParams,
    input: undefined,
    answer: TriggerResponse,
    run: async (op, { name }) => {
      const { id, deduplicated } = await triggerScheduleNow(op, name);
      return { name, task: { id, deduplicated } };
    },
  }),
};
