import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

// D1 runs SQL through workerd's authorizer, which admits only the SQL functions of its allowlist
// (ALLOWED_SQLITE_FUNCTIONS in workerd's src/workerd/util/sqlite.c++, the list Cloudflare's D1 docs point to
// as "the full list of supported functions"). The local D1 these tests use is the same workerd code, so a
// statement of the engine that used a function outside the list would fail here, not first in production.
// These cases show the gate is on locally: the JSON and text functions the stores use run, and a core SQLite
// function that is off the list is refused.
describe("local D1 admits the SQL functions deployed D1 admits, and refuses the others", () => {
  it("runs the JSONB, text and window functions the stores use", async () => {
    const row = await env.DB.prepare(
      `SELECT jsonb_extract(jsonb('[{"b":1}]'), '$[0].b') AS x,
        json(jsonb_set(jsonb('[1,2]'), '$[1]', 5)) AS y,
        json(jsonb_insert(jsonb('[1]'), '$[#]', 2)) AS z,
        instr('ppr', 'r') AS i, substr('abc', 2, 1) AS s, char(49) AS c, unicode('1') AS u,
        (SELECT group_concat(value, '') FROM json_each('["a","b"]')) AS g,
        (SELECT max(n) FROM (SELECT row_number() OVER () AS n FROM json_each('[1,2,3]'))) AS r`,
    ).first();
    expect(row).toEqual({ x: 1, y: "[1,5]", z: "[1,2]", i: 3, s: "b", c: "1", u: 49, g: "ab", r: 3 });
  });

  it("refuses sqlite_version(), a core function off workerd's allowlist", async () => {
    await expect(env.DB.prepare("SELECT sqlite_version() AS v").first()).rejects.toThrow(/not authorized/);
  });
});
