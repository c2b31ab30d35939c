import type { ZodError } from "zod";

type Issue = ZodError["issues"][number];

/** Marks an issue whose message continues its field's path into the value (see `jsonValueIssue`). */
const INSIDE_VALUE = "edgeqInsideValue";

/**
 * A zod issue for a caller JSON value that cannot be stored as sent. `problem` is `jsonValueProblem(value,
 * "")`: the path inside the value, then the reason (`.items[0]: …`, or `: …` for the value itself), so the
 * message reads `tasks[3].payload.items[0]: …` once joined to the field's own path.
 *
 * @example
 * const problem = jsonValueProblem(value, "");
 * if (problem !== null) ctx.addIssue(jsonValueIssue(problem));
 */
export function jsonValueIssue(problem: string) {
  return { code: "custom" as const, message: problem, params: { [INSIDE_VALUE]: true } };
}

interface Flat {
  path: PropertyKey[];
  message: string;
  insideValue: boolean;
}

/**
 * A union that matched no option reports only "Invalid input"; its per-option issues are nested. Keep
 * the option the value came closest to (fewest complaints about the value as a whole, then fewest
 * overall), with paths made absolute, so a bad `tasks[1].delay_s` or `priority` is named.
 */
function flattenIssues(issues: readonly Issue[], prefix: readonly PropertyKey[] = []): Flat[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      const score = (branch: Issue[]) => [branch.filter((i) => i.path.length === 0).length, branch.length] as const;
      const best = issue.errors.reduce((a, b) => {
        const [rootA, allA] = score(a);
        const [rootB, allB] = score(b);
        return rootB < rootA || (rootB === rootA && allB < allA) ? b : a;
      });
      return flattenIssues(best, path);
    }
    const insideValue = issue.code === "custom" && issue.params?.[INSIDE_VALUE] === true;
    return [{ path, message: issue.message, insideValue }];
  });
}

/** Zod issues as one message that names each bad field, e.g. `tasks[2].priority: expected int`. */
export function describeZodError(error: ZodError, source: string): string {
  const issues = flattenIssues(error.issues);
  const parts = issues.slice(0, 5).map((issue) => {
    const path = issue.path.reduce<string>(
      (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)),
      "",
    );
    return issue.insideValue ? `${path || source}${issue.message}` : `${path || source}: ${issue.message}`;
  });
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : "";
  return parts.join("; ") + more;
}
