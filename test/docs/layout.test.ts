/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import architecture from "../../docs/architecture.md?raw";

/** Every module of src/, by path (the keys are all that is read). */
const SOURCES = import.meta.glob("../../src/**/*.ts");

/** docs/architecture.md's source layout: the lines of its first code fence after "## Source layout". */
function layoutBlock(): string {
  const section = architecture.split("\n## Source layout\n")[1];
  if (section === undefined) throw new Error("docs/architecture.md has no ## Source layout section");
  const fence = section.split("```")[1];
  if (fence === undefined) throw new Error("docs/architecture.md's Source layout section has no code block");
  return fence;
}

describe("docs/architecture.md's source layout", () => {
  it("names every folder and top-level file of src/, and nothing that is gone", () => {
    const entries = new Set(
      Object.keys(SOURCES).map((path) => {
        const [first, second] = path.replace("../../src/", "").split("/");
        return second === undefined ? `src/${first}` : `src/${first}/`;
      }),
    );
    expect(entries.size).toBeGreaterThan(15);
    const block = layoutBlock();
    const listed = new Set([...block.matchAll(/(?:^|\s)(src\/[\w.-]+\/?)/gm)].map((m) => m[1]!));
    const missing = [...entries].filter((entry) => !listed.has(entry)).sort();
    const gone = [...listed].filter((entry) => !entries.has(entry)).sort();
    expect({ missing, gone }).toEqual({ missing: [], gone: [] });
  });
});
