import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readmeFirstHour } from "../../scripts/try-create-edgeq.mjs";

/**
 * create-edgeq's generator on its own, in a scratch folder (fast). That the project it writes installs,
 * passes its own `npm test` and serves under `npm run dev` is checked with the packed packages by
 * scripts/run-examples.mjs (test/examples/examples.test.ts).
 */
const GENERATOR = join(process.cwd(), "create-edgeq", "index.mjs");
const scratch = mkdtempSync(join(tmpdir(), "create-edgeq-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8"));
const create = (...args: string[]) =>
  spawnSync(process.execPath, [GENERATOR, ...args], { cwd: scratch, encoding: "utf8" });

describe("create-edgeq", () => {
  it("writes the dependency ranges this repository runs, and edgeq at its own version", () => {
    const repo = readJson("package.json");
    const template = readJson("create-edgeq/template/package.json");
    for (const [name, range] of Object.entries({ ...template.dependencies, ...template.devDependencies })) {
      if (name === "edgeq") continue;
      expect(range, name).toBe(repo.dependencies[name] ?? repo.devDependencies[name]);
    }
    expect(readJson("create-edgeq/package.json").version).toBe(repo.version);
    create("ranges");
    expect(readJson(join(scratch, "ranges", "package.json")).dependencies.edgeq).toBe(`^${repo.version}`);
  });

  it("fills in the project's name, the edgeq spec given and a development token of the project's own", () => {
    writeFileSync(join(scratch, "edgeq.tgz"), "");
    for (const name of ["alpha", "beta"]) expect(create(name, "--edgeq", "./edgeq.tgz").status).toBe(0);

    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
      );
    for (const file of files(join(scratch, "alpha"))) expect(readFileSync(file, "utf8"), file).not.toContain("{{");
    const pkg = readJson(join(scratch, "alpha", "package.json"));
    expect(pkg).toMatchObject({ name: "alpha", dependencies: { edgeq: `file:${join(scratch, "edgeq.tgz")}` } });
    expect(pkg.scripts).toEqual(
      expect.objectContaining({ dev: expect.any(String), test: expect.any(String), deploy: expect.any(String) }),
    );
    expect(readFileSync(join(scratch, "alpha", "wrangler.toml"), "utf8")).toMatch(/^name = "alpha"$/m);

    const token = (name: string) =>
      readFileSync(join(scratch, name, ".dev.vars"), "utf8").match(/^EDGEQ_TOKEN=(\S+)$/m)?.[1];
    expect(token("alpha")).toMatch(/^dev-[\w-]{24}$/);
    expect(token("beta")).not.toBe(token("alpha"));
    expect(readFileSync(join(scratch, "alpha", "README.md"), "utf8")).toContain(`Bearer ${token("alpha")}`);
    expect(readFileSync(join(scratch, "alpha", ".gitignore"), "utf8")).toContain(".dev.vars");
  });

  it("finds the README's first-hour commands that scripts/try-create-edgeq.mjs runs", () => {
    const firstHour = readmeFirstHour(readFileSync("README.md", "utf8"));
    expect(firstHour.standIn).toBe(
      `npm exec --package=./create-edgeq-${readJson("create-edgeq/package.json").version}.tgz -- create-edgeq my-queue --edgeq ./edgeq-${readJson("package.json").version}.tgz`,
    );
    expect(firstHour.setup.slice(1).map((line) => line.replace(/\s+#.*$/, ""))).toEqual([
      "cd my-queue && npm install",
      "npm test",
    ]);
    expect(firstHour.dev).toBe("npm run dev");
    expect(firstHour.calls).toContain("localhost:8787/v1/queues/transcripts/tasks");
    expect(firstHour.caller).toBe("npm run caller");
    expect(firstHour.elsewhere).toEqual([
      expect.stringMatching(/^curl -X POST localhost:8788 -d '\{"text":/),
      expect.stringMatching(/^curl -X POST localhost:8787\/v1\/queues\/drafts\/tasks -H .* -d '\{"type":"count"/),
      "npm run worker",
    ]);
  });

  it("refuses a folder that is not empty, and a name no Worker can carry, writing nothing", () => {
    mkdirSync(join(scratch, "taken"));
    writeFileSync(join(scratch, "taken", "notes.txt"), "mine");
    const taken = create("taken");
    expect(taken.status).toBe(1);
    expect(taken.stderr).toMatch(/taken exists and is not empty/);
    expect(readdirSync(join(scratch, "taken"))).toEqual(["notes.txt"]);

    const bad = create("My Queue");
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(
      '"My Queue" cannot name a Worker: use lowercase letters, digits and dashes (at most 53), e.g. my-queue',
    );
    expect(readdirSync(scratch)).not.toContain("My Queue");

    expect(create().stderr).toMatch(/name one folder to create/);
    expect(execFileSync(process.execPath, [GENERATOR, "--help"], { encoding: "utf8" })).toMatch(
      /^Usage: npm create edgeq@latest <folder>/,
    );
  });
});
