/**
 * A D1 binding that records the SQL of every call that reaches the database — a statement run on its own,
 * or a batch (one transaction) of several — so a test can say which writes went together.
 */
export function recordingD1(d1: D1Database): { db: D1Database; calls: string[][] } {
  const calls: string[][] = [];
  const real = new WeakMap<object, D1PreparedStatement>();
  const textOf = new WeakMap<object, string>();
  const wrap = (text: string, statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, p) {
        if (p === "bind") return (...values: unknown[]) => wrap(text, target.bind(...values));
        if (p === "run" || p === "all" || p === "first" || p === "raw") {
          return (...args: unknown[]) => {
            calls.push([text]);
            return (target[p] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value = target[p as keyof D1PreparedStatement];
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, statement);
    textOf.set(proxy, text);
    return proxy;
  };
  const db = new Proxy(d1, {
    get(target, p) {
      if (p === "prepare") return (text: string) => wrap(text, target.prepare(text));
      if (p === "batch") {
        return (statements: D1PreparedStatement[]) => {
          calls.push(statements.map((s) => textOf.get(s) ?? "?"));
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      const value = target[p as keyof D1Database];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, calls };
}

/** Whether a call writes: a statement that is an INSERT, UPDATE or DELETE, also after a WITH clause. (A batch
 * of reads is not one: a write by id reads its packs and configs in a batch first, src/engine/packs/locate.ts.) */
export const isWrite = (call: string[]): boolean =>
  call.some((s) => /^\s*(WITH\b[\s\S]*\)\s*)?(INSERT|UPDATE|DELETE)\b/i.test(s));
