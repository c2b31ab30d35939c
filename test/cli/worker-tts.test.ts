import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
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

    for (const meta of result.artifacts) {
      const { type, bytes } = await artifact(id!, meta.name);
      expect(type).toBe("audio/wav");
      expect(bytes.length).toBe(meta.size);
      const wav = wavInfo(bytes);
      expect(wav.dataBytes).toBeGreaterThan(0);
      expect(wav.durationS).toBeGreaterThan(0.3); // a short sentence is a second or so of speech
    }
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
    expect(spawnSync("espeak-ng", ["-w", wav, "One."]).status).toBe(0);
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

  it("fails a payload espeak-ng cannot render permanently, naming the field", async () => {
    const queue = uniqueQueue("tts-bad");
    const ids = await enqueue(queue, [
      { type: "tts", payload: { text: "Hi.", format: "mp3" }, max_attempts: 3 },
      { type: "tts", payload: { text: "Hi.", voice: "zzz-nonexistent" }, max_attempts: 3 },
      { type: "tts", payload: { words: "Hi." }, max_attempts: 3 },
    ]);
    const run = await runCli(["worker", queue, "--engine", "tts", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    const [mp3, voice, shape] = await Promise.all(ids.map(getTask));
    expect(mp3).toMatchObject({
      state: "dead",
      errors: [{ kind: "permanent", message: "format: espeak-ng renders wav only, not mp3" }],
    });
    expect(voice!.state).toBe("dead");
    expect(voice!.errors[0]!.message).toMatch(/^voice: espeak-ng has no voice "zzz-nonexistent"/);
    expect(shape!.state).toBe("dead");
    expect(shape!.errors[0]!.message).toMatch(/^invalid tts payload/);
  });

  it("refuses to start, clearly, when espeak-ng is not installed", async () => {
    // A PATH holding only sh: the worker itself runs from process.execPath.
    const bin = join(tmp.dir, "bin");
    mkdirSync(bin);
    symlinkSync("/bin/sh", join(bin, "sh"));
    const run = await runCli(["worker", uniqueQueue("tts-none"), "--engine", "tts", "--once"], { PATH: bin });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/espeak-ng.*not installed.*apt-get install espeak-ng/);
  });
});
