import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { edgeq } from "./commands-support";

// `edgeq migrations sync <dir>` (the built CLI): edgeq's migrations copied into a Worker's own folder under
// their own names, the Worker's files left alone. Applying such a folder, before and after an upgrade of
// edgeq: test/app/user-migrations.test.ts.

const EDGEQ = join(process.cwd(), "migrations");
const edgeqFiles = () =>
  readdirSync(EDGEQ)
    .filter((name) => name.endsWith(".sql"))
    .sort();

/** A Worker's project folder with one migration of its own. */
function project(): { dir: string; own: string } {
  const dir = join(mkdtempSync(join(tmpdir(), "edgeq-sync-")), "migrations");
  mkdirSync(dir);
  const own = join(dir, `${String(edgeqFiles().length).padStart(4, "0")}_orders.sql`);
  writeFileSync(own, "CREATE TABLE orders (id TEXT PRIMARY KEY);\n");
  return { dir, own };
}

describe("edgeq migrations sync", () => {
  it("copies every migration of edgeq's, byte for byte, beside the folder's own; then finds nothing to do", async () => {
    const { dir, own } = project();
    const first = await edgeq(["migrations", "sync", dir]);
    expect(first.code, first.stderr).toBe(EXIT.ok);
    expect(first.stdout).toBe(
      `copied ${edgeqFiles().length} of edgeq's migrations into ${dir}: ${edgeqFiles().join(", ")}\n`,
    );
    for (const name of edgeqFiles())
      expect(readFileSync(join(dir, name)).equals(readFileSync(join(EDGEQ, name)))).toBe(true);
    expect(readFileSync(own, "utf8")).toBe("CREATE TABLE orders (id TEXT PRIMARY KEY);\n");
    const again = await edgeq(["migrations", "sync", dir]);
    expect([again.code, again.stdout]).toEqual([EXIT.ok, `${dir} has edgeq's ${edgeqFiles().length} migrations\n`]);
  });

  it("--check copies nothing and exits 1 naming what the folder lacks (an upgrade not synced yet)", async () => {
    const { dir } = project();
    await edgeq(["migrations", "sync", dir]);
    const newest = edgeqFiles().at(-1)!;
    unlinkSync(join(dir, newest));
    const check = await edgeq(["migrations", "sync", dir, "--check"]);
    expect(check.code).toBe(EXIT.api);
    expect(check.stderr).toBe(`edgeq: ${dir} lacks edgeq's ${newest}: run edgeq migrations sync ${dir}\n`);
    expect(existsSync(join(dir, newest))).toBe(false);
    const json = await edgeq(["migrations", "sync", dir, "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({ missing: [newest], present: edgeqFiles().slice(0, -1) });
    expect((await edgeq(["migrations", "sync", dir, "--check"])).code).toBe(EXIT.ok);
  });

  it("refuses a changed copy of one of edgeq's migrations, copying nothing", async () => {
    const { dir } = project();
    await edgeq(["migrations", "sync", dir]);
    const [first, ...rest] = edgeqFiles();
    appendFileSync(join(dir, first!), "-- edited\n");
    unlinkSync(join(dir, rest.at(-1)!));
    const run = await edgeq(["migrations", "sync", dir]);
    expect(run.code).toBe(EXIT.input);
    expect(run.stderr).toMatch(new RegExp(`^edgeq: .*${first}.* differs from edgeq's ${first}`));
    expect(existsSync(join(dir, rest.at(-1)!))).toBe(false);
  });

  it("creates the folder when it does not exist, and needs no server", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "edgeq-sync-")), "db", "migrations");
    const run = await edgeq(["migrations", "sync", dir, "--url", "http://127.0.0.1:9"]);
    expect(run.code, run.stderr).toBe(EXIT.ok);
    expect(readdirSync(dir).sort()).toEqual(edgeqFiles());
  });
});
