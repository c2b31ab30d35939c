import type { z } from "zod";
import { describeZodError } from "../../contracts/describe-zod-error";
import { EdgeqError } from "../../contracts/errors";
import type { OperationContext } from "../context";

/**
 * One definition per operation of the API: its input schemas (src/contracts/api.ts), the mapping from the
 * wire's values to the operation call, and the answer. The HTTP route (src/http/operation-route.ts) and the
 * RPC method (src/rpc/edgeq-entrypoint.ts) are both derived from it, so a body is validated, mapped and
 * answered alike over both by construction (test/rpc/same-answers.test.ts runs each through both).
 */

/**
 * An answer already rendered as JSON text: a lease's tasks, each rendered by SQLite in the lease statement
 * itself (src/operations/lease.ts). HTTP sends the text as it is; RPC parses it. `T` is what the text holds.
 *
 * @example
 * return new JsonText<{ tasks: LeasedTaskView[] }>(`{"tasks":[${texts.join(",")}]}`);
 */
export class JsonText<T> {
  /** The type of what the text holds, for the RPC method's answer (no value at run time). */
  declare readonly holds?: T;
  constructor(readonly text: string) {}
}

/** Where an operation's input comes from over HTTP: the JSON body or the query string. An RPC method takes
 * it as its last argument either way. */
export interface Input<S extends z.ZodType = z.ZodType> {
  from: "json" | "query";
  schema: S;
  /**
   * The option a caller meant, for a schema that is a union: zod explains a failed union against whichever
   * option it found closest, so a failure is explained against this one instead (enqueue: one task, or
   * `{ tasks }`).
   */
  meant?: (value: unknown) => z.ZodType;
}

/**
 * The JSON body's schema (and, for a union, the option a caller meant).
 *
 * @example
 * input: jsonInput(FailBody),
 */
export function jsonInput<S extends z.ZodType>(schema: S, meant?: (value: unknown) => z.ZodType) {
  return { from: "json", schema, meant } as const satisfies Input<S>;
}

/**
 * The query string's schema.
 *
 * @example
 * input: queryInput(TaskListQuery),
 */
export function queryInput<S extends z.ZodType>(schema: S) {
  return { from: "query", schema } as const satisfies Input<S>;
}

/** What `run` receives for an input: the parsed value, or nothing when the operation takes none. */
export type InputValue<In> = In extends Input<infer S> ? z.output<S> : undefined;

/**
 * What a caller sends as an operation's input — its schema's input type (fields with defaults optional), as
 * edgeq/client's request types are (src/client/types.ts): the RPC method's last argument.
 *
 * @example
 * enqueue(queue: string, body: RequestOf<typeof queueApi.enqueue>) { ... }
 */
export type RequestOf<O> = O extends { input: Input<infer S> } ? z.input<S> : never;

/** What `run` receives for path parameters (HTTP) / leading arguments (RPC). */
export type ParamsValue<P> = P extends z.ZodType ? z.output<P> : undefined;

/**
 * An operation of the API.
 *
 * - `params`: the path parameters (`{queue}`, `{id}`, `{name}`), which an RPC method takes as its leading
 *   arguments; none for an operation on everything (`GET /v1/queues`).
 * - `input`: the body or query, which an RPC method takes as its last argument.
 * - `answer`: the answer's schema, as the OpenAPI document shows it; `run`'s answer must fit it (checked by
 *   the compiler in `defineOperation`).
 * - `run`: the operation call with the values the schemas parsed, and the answer built from its result.
 */
export interface ApiOperation<
  P extends z.ZodObject | undefined = z.ZodObject | undefined,
  In extends Input | undefined = Input | undefined,
  S extends z.ZodType = z.ZodType,
  Answer = unknown,
> {
  params: P;
  input: In;
  answer: S;
  run(op: OperationContext, params: ParamsValue<P>, input: InputValue<In>): Promise<Answer | JsonText<Answer>>;
}

/** The answer an operation gives (for a JsonText, what its text holds). */
export type AnswerOf<O> =
  O extends ApiOperation<z.ZodObject | undefined, Input | undefined, z.ZodType, infer A> ? A : never;

/**
 * Defines an operation, checking at compile time that what `run` answers fits the answer's schema.
 *
 * @example
 * export const getTask = defineOperation({
 *   params: TaskParams,
 *   input: undefined,
 *   answer: TaskSchema,
 *   run: async (op, { id }) => toTaskView(await readTask(op, id)),
 * });
 */
export function defineOperation<
  P extends z.ZodObject | undefined,
  In extends Input | undefined,
  S extends z.ZodType,
  Answer extends z.output<S>,
>(definition: {
  params: P;
  input: In;
  answer: S;
  run(op: OperationContext, params: ParamsValue<P>, input: InputValue<In>): Promise<Answer | JsonText<Answer>>;
}): ApiOperation<P, In, S, Answer> {
  return definition;
}

/**
 * The `invalid_request` for a value its schema refused, naming the field as the HTTP API does: `source` is
 * where the value came from, as Hono's validator names it ("json", "query", "param"); a union with `meant`
 * is explained against the option the caller meant.
 *
 * @example
 * if (!parsed.success) throw invalidInput(input, value, parsed.error, "json");
 */
export function invalidInput(input: Input | undefined, value: unknown, error: z.ZodError, source: string): EdgeqError {
  const meant = input?.meant?.(value).safeParse(value);
  const explained = meant !== undefined && !meant.success ? meant.error : error;
  return new EdgeqError("invalid_request", describeZodError(explained, source));
}

/**
 * An RPC call's arguments parsed by the operation's schemas, in the order HTTP checks a request's parts
 * (query, then path parameters, then the JSON body), with the HTTP API's error for the first refusal.
 *
 * @example
 * const { params, input } = parseArguments(taskApi.fail, { id }, body);
 */
export function parseArguments<P extends z.ZodObject | undefined, In extends Input | undefined>(
  operation: ApiOperation<P, In, z.ZodType, unknown>,
  params: Record<string, unknown>,
  input: unknown,
): { params: ParamsValue<P>; input: InputValue<In> } {
  const { input: from } = operation;
  const parse = (schema: z.ZodType, value: unknown, source: string, explain?: Input): unknown => {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw invalidInput(explain, value, parsed.error, source);
    return parsed.data;
  };
  const query = from?.from === "query" ? parse(from.schema, input, "query") : undefined;
  const parsedParams = operation.params === undefined ? undefined : parse(operation.params, params, "param");
  const body = from?.from === "json" ? parse(from.schema, input, "json", from) : undefined;
  return { params: parsedParams as ParamsValue<P>, input: (from?.from === "query" ? query : body) as InputValue<In> };
}
