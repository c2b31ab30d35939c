/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import cruiser from "../../.dependency-cruiser.cjs?raw";
import architecture from "../../docs/architecture.md?raw";

/** The folders (and top-level files) of src/ that .dependency-cruiser.cjs's ALLOWED table has a line for. */
function cruiserLayers(): string[] {
  const table = cruiser.split("\nconst ALLOWED = {\n")[1]?.split("\n};\n")[0];
  if (table === undefined) throw new Error(".dependency-cruiser.cjs has no ALLOWED table");
  return [...table.matchAll(/^ {2}"?([\w.-]+)"?: \[/gm)].map((m) => m[1]!);
}

/** The names in the left column (the first 20 characters of each line) of docs/architecture.md's Layers block. */
function drawnLayers(): string[] {
  const section = architecture.split("\n## Layers\n")[1];
  const block = section?.split("```")[1];
  if (block === undefined) throw new Error("docs/architecture.md has no ## Layers code block");
  return block
    .split("\n")
    .flatMap((line) => line.slice(0, 20).split(/[\s,│▼▲]+/))
    .filter((name) => name !== "")
    .map((name) => name.replace(/\/$/, ""));
}

describe("docs/architecture.md's layers", () => {
  it("name every layer of .dependency-cruiser.cjs, and no other", () => {
    const table = cruiserLayers();
    expect(table.length).toBeGreaterThan(20);
    // index.ts is outside the table: its own rule (reference-deployment-uses-the-package) holds it.
    const drawn = drawnLayers().filter((name) => name !== "index.ts");
    expect({ missing: table.filter((name) => !drawn.includes(name)).sort() }).toEqual({ missing: [] });
    expect({ notInTable: drawn.filter((name) => !table.includes(name)).sort() }).toEqual({ notInTable: [] });
  });
});
