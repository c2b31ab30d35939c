import type { z } from "zod";
import type { LeasedTaskView, TaskView } from "../contracts/task";
import type { scheduleApi } from "../operations/api/schedule-api";

/** Any JSON value: what a task's payload, result and checkpoint are. Workers RPC types cannot carry
 * `unknown` (a method answering it types as `never` for the caller) and give up on a recursive JSON type
 * ("excessively deep"), so the binding names it one level deep. */
export type JsonValue = string | number | boolean | null | object;

/**
 * An API answer typed for callers across RPC: its `unknown` (JSON) fields as JsonValue, and without `then`
 * in the type — Workers RPC's types refuse any object with a property named `then` (it would look like a
 * promise). The value still carries `then` (null, or the children it chains), as over HTTP.
 *
 * @example
 * type RpcTask = OverRpc<TaskView>;
 */
export type OverRpc<T> = unknown extends T
  ? JsonValue
  : T extends readonly (infer Item)[]
    ? OverRpc<Item>[]
    : T extends object
      ? { [K in keyof T as K extends "then" ? never : K]: OverRpc<T[K]> }
      : T;

/** A task as the API shows it, and a leased one (with its lease token). */
export type RpcTask = OverRpc<TaskView>;
export type RpcLeasedTask = OverRpc<LeasedTaskView>;

/** A schedule as the API shows it (its task's JSON fields one level deep, as above). */
export type RpcSchedule = OverRpc<z.infer<typeof scheduleApi.get.answer>>;
