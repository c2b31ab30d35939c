import { TaskType } from "../contracts/fields";
import type { Processor } from "../processors/types";

/**
 * Why a Worker's processor list cannot run, or null: checked once when the Worker is built, so a mistake
 * fails the deployment's first request with a message naming the processor — never the first task that
 * needs it. A processor needs a `type` a task can carry (the API's task type rule), a zod `payload`
 * schema and a `run` function (an `engine`, if given, a function); two processors may not share a type.
 *
 * @example
 * processorListProblem([{ type: "bad type!", ... }]); // 'processors[0] ("bad type!"): type: 1-64 letters, …'
 */
export function processorListProblem(processors: readonly unknown[]): string | null {
  const seen = new Map<string, number>();
  for (const [i, candidate] of processors.entries()) {
    const p = candidate as Partial<Processor> | null;
    const name = typeof p?.type === "string" ? ` (${JSON.stringify(p.type)})` : "";
    const where = `processors[${i}]${name}`;
    if (typeof p !== "object" || p === null) return `${where}: not a processor object`;
    const type = TaskType.safeParse(p.type);
    if (!type.success) return `${where}: type: ${type.error.issues[0]?.message ?? "invalid"}`;
    if (typeof p.payload?.safeParse !== "function") return `${where}: payload: a zod schema is required`;
    if (p.engine !== undefined && typeof p.engine !== "function") return `${where}: engine: must be a function`;
    if (typeof p.run !== "function") return `${where}: run: a function is required`;
    const earlier = seen.get(type.data);
    if (earlier !== undefined) return `${where}: type "${type.data}" is already processors[${earlier}]'s`;
    seen.set(type.data, i);
  }
  return null;
}
