import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { api, edgeqUrl, enqueue, getTask, killLeftovers, runCli, tempDir, uniqueQueue } from "./worker-support";
import { inject } from "vitest";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => {
  killLeftovers();
  tmp.cleanup();
});

/** Fetches an artifact's bytes as the API serves them. */
async function artifact(id: string, name: string): Promise<{ type: string | null; bytes: Buffer }> {
  const res = await fetch(`${edgeqUrl()}/v1/tasks/${id}/artifacts/${name}`, {
    headers: { Authorization: `Bearer ${inject("edgeqToken")}` },
  });
  expect(res.status).toBe(200);
  return { type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
}

/** Reads a RIFF/WAVE file's byte rate and data size (walking its chunks). */
function wavInfo(bytes: Buffer): { byteRate: number; dataBytes: number; durationS: number } {
  expect(bytes.toString("ascii", 0, 4)).toBe("RIFF");
  expect(bytes.toString("ascii", 8, 12)).toBe("WAVE");
  let byteRate = 0;
  let dataBytes = 0;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = bytes.toString("ascii", at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === "fmt ") byteRate = bytes.readUInt32LE(at + 8 + 8);
    if (id === "data") {
      dataBytes = Math.min(size, bytes.length - at - 8);
      break;
    }
    at += 8 + size + (size % 2);
  }
  return { byteRate, dataBytes, durationS: byteRate > 0 ? dataBytes / byteRate : 0 };
}

/** A PATH holding only sh, so no espeak-ng: the CLI itself runs from process.execPath. */
function pathWithoutEspeak(): string {
  const bin = join(tmp.dir, "bin");
  mkdirSync(bin);
  symlinkSync("/bin/sh", join(bin, "sh"));
  return bin;
}

/** Checks that an artifact is real speech: a WAV whose audio lasts at least `minS` seconds. */
async function expectSpeech(id: string, meta: { name: string; size: number }, minS: number) {
  const { type, bytes } = await artifact(id, meta.name);
  expect(type).toBe("audio/wav");
  expect(bytes.length).toBe(meta.size);
  const wav = wavInfo(bytes);
  expect(wav.dataBytes).toBeGreaterThan(0);
  expect(wav.durationS).toBeGreaterThan(minS);
}

interface TtsResult {
  model: string;
  voice: string;
  format: string;
  items: number;
  resumed_from: number;
  artifacts: Array<{ name: string; content_type: string; size: number }>;
}

describe("edgeq worker --engine tts", () => {
  it("renders each item with espeak-ng into a WAV artifact the API serves back", async () => {
    const queue = uniqueQueue("tts");
    const [id] = await enqueue(queue, [
      {
        type: "tts",
        payload: { items: ["Hello from edgeq.", { text: "-A second item, in American English.", voice: "en-us" }] },
      },
    ]);
    const run = await runCli(["worker", queue, "--engine", "tts", "--once"]);
    expect(run.code, run.stderr).toBe(0);

    const task = await getTask(id!);
    expect(task.state).toBe("completed");
    expect(task.progress).toBe(100);
    const result = task.result as TtsResult;
    expect(result).toMatchObject({ model: "espeak-ng", voice: "en", format: "wav", items: 2, resumed_from: 0 });
    expect(result.artifacts.map((a) => [a.name, a.content_type])).toEqual([
      ["item-0001.wav", "audio/wav"],
      ["item-0002.wav", "audio/wav"],
    ]);
    expect(task.checkpoint).toEqual({ done: result.artifacts });

    // A short sentence is a second or so of speech.
    for (const meta of result.artifacts) await expectSpeech(id!, meta, 0.3);
  });

  it("resumes after the items an earlier attempt checkpointed", async () => {
    const queue = uniqueQueue("tts-resume");
    const [id] = await enqueue(queue, [{ type: "tts", payload: { items: ["One.", "Two."] } }]);
    // An earlier holder rendered item 1, stored it, checkpointed it, and handed the task back.
    const { tasks } = await api<{ tasks: Array<{ id: string; lease_token: string }> }>(
      "POST",
      `/v1/queues/${queue}/lease`,
      {
        max: 1,
      },
    );
    const token = tasks[0]!.lease_token;
    const wav = join(tmp.dir, "one.wav");
    // The npm build of espeak-ng, by hand, as the worker runs it when the host has no espeak-ng.
    expect(spawnSync(process.execPath, ["cli/espeak-ng-wasm.mjs", "-w", wav, "One."]).status).toBe(0);
    const bytes = readFileSync(wav);
    const put = await fetch(`${edgeqUrl()}/v1/tasks/${id}/artifacts/item-0001.wav`, {
      method: "PUT",
      headers: {
        Authorization: `Bearer ${inject("edgeqToken")}`,
        "Edgeq-Lease-Token": token,
        "Content-Type": "audio/wav",
      },
      body: bytes,
    });
    expect(put.status).toBe(201);
    const done = [{ name: "item-0001.wav", content_type: "audio/wav", size: bytes.length }];
    await api("POST", `/v1/tasks/${id}/heartbeat`, { lease_token: token, checkpoint: { done }, progress: 50 });
    await api("POST", `/v1/tasks/${id}/release`, { lease_token: token });

    const run = await runCli(["worker", queue, "--engine", "tts", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    const task = await getTask(id!);
    expect(task.state).toBe("completed");
    const result = task.result as TtsResult;
    expect(result.resumed_from).toBe(1);
    expect(result.artifacts[0]).toEqual(done[0]);
    expect(result.artifacts[1]!.name).toBe("item-0002.wav");
  });

  it("fails a payload espeak-ng cannot render permanently, naming the field and listing the voices", async () => {
    const queue = uniqueQueue("tts-bad");
    const ids = await enqueue(queue, [
      { type: "tts", payload: { text: "Hi.", format: "mp3" }, max_attempts: 3 },
      { type: "tts", payload: { text: "Hi.", voice: "zzz-nonexistent" }, max_attempts: 3 },
      { type: "tts", payload: { words: "Hi." }, max_attempts: 3 },
      { type: "tts", payload: { items: ["Hi.", { text: "Mae govannen.", voice: "elvish" }] }, max_attempts: 3 },
      // Not an unknown voice: espeak-ng ships Klingon (language piqd, voice name "Klingon").
      { type: "tts", payload: { text: "Hi.", voice: "klingon" }, max_attempts: 3 },
    ]);
    const run = await runCli(["worker", queue, "--engine", "tts", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    const [mp3, voice, shape, item, klingon] = await Promise.all(ids.map(getTask));
    expect(mp3).toMatchObject({
      state: "dead",
      errors: [{ kind: "permanent", message: "format: espeak-ng renders wav only, not mp3" }],
    });
    expect(voice!.state).toBe("dead");
    expect(voice!.errors).toHaveLength(1);
    expect(voice!.errors[0]).toMatchObject({ kind: "permanent" });
    const message = voice!.errors[0]!.message;
    expect(message).toMatch(/^voice: espeak-ng has no voice "zzz-nonexistent"; use a language \(af, am, /);
    expect(message).toMatch(/\ben-us\b.*\bpiqd\b/); // the list is espeak-ng's own
    expect(message).toMatch(/--voices`, or either with a variant from `.*--voices=variant` \(e\.g\. en\+f3\)$/);
    expect(shape!.state).toBe("dead");
    expect(shape!.errors[0]!.message).toMatch(/^invalid tts payload/);
    expect(item).toMatchObject({ state: "dead", errors: [{ kind: "permanent" }] });
    expect(item!.errors[0]!.message).toMatch(/^items\.1\.voice: espeak-ng has no voice "elvish"; /);
    expect(klingon!.state).toBe("completed");
    await expectSpeech(klingon!.id, (klingon!.result as TtsResult).artifacts[0]!, 0.1);
  });

  it("renders with the npm build of espeak-ng when the host has none", async () => {
    const queue = uniqueQueue("tts-wasm");
    const [id] = await enqueue(queue, [{ type: "tts", payload: { text: "Rendered without a system espeak-ng." } }]);
    const run = await runCli(["worker", queue, "--engine", "tts", "--once"], { PATH: pathWithoutEspeak() });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/started: engine tts \(espeak-ng [^ ]+ \(WebAssembly build from npm\)\)/);
    const task = await getTask(id!);
    expect(task.state).toBe("completed");
    const result = task.result as TtsResult;
    expect(result).toMatchObject({ model: "espeak-ng", voice: "en", format: "wav", items: 1 });
    await expectSpeech(id!, result.artifacts[0]!, 1);
  });

  it("refuses to start, clearly, when neither a system espeak-ng nor the npm build is there", () => {
    // The bundle alone, copied away from the checkout: no cli/espeak-ng-wasm.mjs, no node_modules.
    mkdirSync(join(tmp.dir, "bin"));
    mkdirSync(join(tmp.dir, "dist"));
    copyFileSync("bin/edgeq.mjs", join(tmp.dir, "bin", "edgeq.mjs"));
    copyFileSync("dist/edgeq.mjs", join(tmp.dir, "dist", "edgeq.mjs"));
    const path = join(tmp.dir, "path");
    mkdirSync(path);
    const run = spawnSync(
      process.execPath,
      [join(tmp.dir, "bin", "edgeq.mjs"), "worker", uniqueQueue("tts-none"), "--engine", "tts", "--once"],
      {
        encoding: "utf8",
        timeout: 30_000,
        env: { PATH: path, EDGEQ_URL: edgeqUrl(), EDGEQ_TOKEN: inject("edgeqToken"), HOME: tmp.dir },
      },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/espeak-ng.*not installed on this host \(not on PATH\).*npm build could not be found/);
    expect(run.stderr).toMatch(/apt-get install espeak-ng/);
  });
});
