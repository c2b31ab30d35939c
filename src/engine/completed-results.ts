import { and, desc, eq, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks } from "../db/schema";

/** Results read per query. A result may be up to 256 KiB (any worker can complete a task), so 100 per
 * page keeps one page's memory under ~26 MB inside the 128 MB isolate. */
export const RESULTS_PAGE_SIZE = 100;

/** Which completed tasks to read: one type within one group. */
export interface CompletedScope {
  type: string;
  group: string;
}

/**
 * The results of a group's newest completed tasks of one type, newest first, as `pick` reads them: it
 * gets each result (parsed JSON) and returns what to keep, or null to skip it. Reading stops once `limit`
 * are kept or the tasks run out. Keyset paging on the primary key: each page resumes where the last one
 * stopped, RESULTS_PAGE_SIZE at a time.
 *
 * @example
 * const scores = await collectCompletedResults(db, { type: "tag", group: "library-1" }, 1_000, (r) => r);
 */
export async function collectCompletedResults<T>(
  db: Db,
  scope: CompletedScope,
  limit: number,
  pick: (result: unknown) => T | null,
): Promise<T[]> {
  const kept: T[] = [];
  let before: string | null = null;
  while (kept.length < limit) {
    const page: { id: string; result: string | null }[] = await db
      .select({ id: tasks.id, result: tasks.result })
      .from(tasks)
      .where(
        and(
          eq(tasks.type, scope.type),
          eq(tasks.state, "completed"),
          eq(tasks.groupKey, scope.group),
          before === null ? undefined : lt(tasks.id, before),
        ),
      )
      .orderBy(desc(tasks.id))
      .limit(RESULTS_PAGE_SIZE);
    for (const row of page) {
      const picked = row.result === null ? null : pick(parseResult(row.result));
      if (picked !== null && kept.length < limit) kept.push(picked);
    }
    if (page.length < RESULTS_PAGE_SIZE) break;
    before = page[page.length - 1]!.id;
  }
  return kept;
}

/** A stored result; text that is not JSON (never written by the engine) reads as undefined. */
function parseResult(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
