// Wrangler's output, minus one warning edgeq's wrangler.toml makes on purpose.
//
// Every wrangler command run with `--env local` warns that `"ai" exists at the top level, but not on
// "env.local"`. It is deliberate: Workers AI has no local mode (declared under env.local, `wrangler dev`
// tries to open a remote session and fails offline), so the local environment leaves it out and the
// processors use their local engines. Wrangler has no setting to silence one diagnostic, and
// `--log-level error` would hide every other warning, so the launcher drops exactly this one.

/** The diagnostic dropped (ANSI colours removed before matching). */
const AI_NOT_IN_LOCAL = /^\s*- "ai" exists at the top level, but not on "env\.local"\./;

/** The first line of wrangler's configuration warning, which holds the diagnostics. */
const CONFIG_WARNING = /Processing wrangler\.toml configuration:/;

/** A header inside the warning that names an environment; it is empty once its diagnostics are gone. */
const ENV_HEADER = /^\s*- "env\.[^"]+" environment configuration$/;

// eslint-disable-next-line no-control-regex -- ANSI colour sequences are control characters
const ANSI = /\u001b\[[0-9;]*m/g;

/** @param {string} line */
const plain = (line) => line.replace(ANSI, "");

/** @param {string} line */
const indent = (line) => /^\s*/.exec(plain(line))?.[0].length ?? 0;

/**
 * The configuration warning without the `ai` diagnostic, or nothing if that was all it said.
 * @param {string[]} block
 * @returns {string[]}
 */
function withoutAiDiagnostic(block) {
  const at = block.findIndex((line) => AI_NOT_IN_LOCAL.test(plain(line)));
  if (at < 0) return block;
  let end = at + 1;
  while (
    end < block.length &&
    plain(block[end] ?? "").trim() !== "" &&
    indent(block[end] ?? "") > indent(block[at] ?? "")
  ) {
    end++;
  }
  const rest = [...block.slice(0, at), ...block.slice(end)];
  const saysMore = rest.some((line) => /^\s*- /.test(plain(line)) && !ENV_HEADER.test(plain(line)));
  return saysMore ? rest : [];
}

/**
 * A line filter for one of wrangler's output streams: `push` its chunks, `end` when it closes; `write`
 * receives the text to show. A configuration warning is held until its closing blank lines (it arrives
 * in one write) and passed on without the `ai` diagnostic.
 * @param {(text: string) => void} write
 * @example
 * const out = wranglerOutputFilter((text) => process.stderr.write(text));
 * child.stderr.on("data", (chunk) => out.push(chunk.toString()));
 * child.stderr.on("end", () => out.end());
 */
export function wranglerOutputFilter(write) {
  let partial = "";
  /** @type {string[] | undefined} */
  let block;
  const flushBlock = () => {
    if (block) {
      const kept = withoutAiDiagnostic(block);
      if (kept.length > 0) write(kept.map((line) => `${line}\n`).join(""));
    }
    block = undefined;
  };
  /** @param {string} line */
  const line = (line) => {
    if (block) {
      block.push(line);
      // It ends with two blank lines after its diagnostics (blank lines also come before them).
      const n = block.length;
      const blank = (/** @type {string | undefined} */ l) => plain(l ?? "").trim() === "";
      const listed = block.some((l) => /^\s*- /.test(plain(l)));
      if (listed && blank(block[n - 1]) && blank(block[n - 2])) flushBlock();
      return;
    }
    if (CONFIG_WARNING.test(plain(line))) block = [line];
    else write(`${line}\n`);
  };
  return {
    /** @param {string} chunk */
    push(chunk) {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      lines.forEach(line);
    },
    end() {
      if (partial) line(partial);
      partial = "";
      flushBlock();
    },
  };
}
