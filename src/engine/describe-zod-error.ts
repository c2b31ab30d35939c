import type { ZodError } from "zod";

type Issue = ZodError["issues"][number];

/**
 * A union that matched no option reports only "Invalid input"; its per-option issues are nested. Keep
 * the option the value came closest to (fewest complaints about the value as a whole, then fewest
 * overall), with paths made absolute, so a bad `tasks[1].delay_s` or `priority` is named.
 */
function flattenIssues(
  issues: readonly Issue[],
  prefix: readonly PropertyKey[] = [],
): Array<{ path: PropertyKey[]; message: string }> {
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
    return [{ path, message: issue.message }];
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
    return `${path || source}: ${issue.message}`;
  });
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : "";
  return parts.join("; ") + more;
}
