/**
 * Section 6: the SQS-compatible endpoint (src/sqs/) through the real `@aws-sdk/client-sqs`, against the same
 * local server (wrangler dev) as the native API on the same run: SendMessageBatch(10), then a burn-down of
 * ReceiveMessage(10) + DeleteMessageBatch(10) by several consumers — and the same shape natively (enqueue
 * 10 per call, lease 10 + ack 10). The ratio is what speaking SQS costs against speaking edgeq.
 */
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY, SQS_MAX_BATCH_ENTRIES } from "../src/contracts/limits";
import { BENCH_TOKEN, startLocalServer } from "./local-server";
import { fmtSpread, spread, type Spread } from "./stats";

export interface SqsOptions {
  messages: number;
  consumers: number;
  reps: number;
  log: (line: string) => void;
}

export interface SqsSection {
  messages: number;
  consumers: number;
  batch: number;
  sqs: { sendPerS: Spread; burnPerS: Spread };
  native: { sendPerS: Spread; burnPerS: Spread };
}

const BATCH = SQS_MAX_BATCH_ENTRIES;

/** Runs `work` on `workers` parallel loops until each returns false. */
async function parallel(workers: number, work: () => Promise<boolean>): Promise<void> {
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (await work());
    }),
  );
}

/** Messages per second of a phase. */
async function rate(count: number, phase: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await phase();
  return (count / (performance.now() - t0)) * 1000;
}

async function runSqs(sqs: SQSClient, queue: string, opts: SqsOptions) {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: queue }));
  let next = 0;
  const sendPerS = await rate(opts.messages, () =>
    parallel(opts.consumers, async () => {
      if (next >= opts.messages) return false;
      const first = next;
      next += BATCH;
      const Entries = Array.from({ length: Math.min(BATCH, opts.messages - first) }, (_, i) => ({
        Id: String(i),
        MessageBody: JSON.stringify({ i: first + i }),
      }));
      const out = await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries }));
      if (out.Failed?.length) throw new Error(`SendMessageBatch: ${out.Failed.length} failed`);
      return true;
    }),
  );
  let done = 0;
  const burnPerS = await rate(opts.messages, () =>
    parallel(opts.consumers, async () => {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: BATCH, VisibilityTimeout: 300 }),
      );
      if (Messages.length === 0) return false;
      const Entries = Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle }));
      const out = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl, Entries }));
      if (out.Failed?.length) throw new Error(`DeleteMessageBatch: ${out.Failed.length} failed`);
      done += Messages.length;
      return true;
    }),
  );
  if (done !== opts.messages) throw new Error(`sqs burn-down: ${done} of ${opts.messages} messages`);
  return { sendPerS, burnPerS };
}

async function runNative(url: string, queue: string, opts: SqsOptions) {
  const call = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${BENCH_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  let next = 0;
  const sendPerS = await rate(opts.messages, () =>
    parallel(opts.consumers, async () => {
      if (next >= opts.messages) return false;
      const first = next;
      next += BATCH;
      const tasks = Array.from({ length: Math.min(BATCH, opts.messages - first) }, (_, i) => ({
        payload: { i: first + i },
      }));
      await call(`/v1/queues/${queue}/tasks`, { tasks });
      return true;
    }),
  );
  let done = 0;
  const burnPerS = await rate(opts.messages, () =>
    parallel(opts.consumers, async () => {
      const { tasks } = await call<{ tasks: Array<{ id: string; lease_token: string }> }>(`/v1/queues/${queue}/lease`, {
        max: BATCH,
        visibility_timeout_s: 300,
      });
      if (tasks.length === 0) return false;
      await call(`/v1/queues/${queue}/ack`, { complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })) });
      done += tasks.length;
      return true;
    }),
  );
  if (done !== opts.messages) throw new Error(`native burn-down: ${done} of ${opts.messages} tasks`);
  return { sendPerS, burnPerS };
}

export async function runSqsSection(root: string, opts: SqsOptions): Promise<SqsSection> {
  const server = await startLocalServer(root);
  try {
    const sqs = new SQSClient({
      endpoint: server.url,
      region: "us-east-1",
      credentials: { accessKeyId: SQS_DEV_ACCESS_KEY_ID, secretAccessKey: SQS_DEV_SECRET_ACCESS_KEY },
    });
    const s = { send: [] as number[], burn: [] as number[] };
    const n = { send: [] as number[], burn: [] as number[] };
    // Alternated, so drift in the machine's load touches both alike.
    for (let rep = 0; rep < opts.reps; rep++) {
      const viaSqs = await runSqs(sqs, `bench-sqs-${rep}`, opts);
      s.send.push(viaSqs.sendPerS);
      s.burn.push(viaSqs.burnPerS);
      const native = await runNative(server.url, `bench-native-${rep}`, opts);
      n.send.push(native.sendPerS);
      n.burn.push(native.burnPerS);
      opts.log(
        `sqs: rep ${rep + 1}: burn-down ${viaSqs.burnPerS.toFixed(0)} msgs/s over SQS, ${native.burnPerS.toFixed(0)} tasks/s native`,
      );
    }
    sqs.destroy();
    return {
      messages: opts.messages,
      consumers: opts.consumers,
      batch: BATCH,
      sqs: { sendPerS: spread(s.send), burnPerS: spread(s.burn) },
      native: { sendPerS: spread(n.send), burnPerS: spread(n.burn) },
    };
  } finally {
    await server.stop();
  }
}

/** The report's section 6. */
export function sqsReportSection(outcome: { value?: SqsSection; skipped?: string } | undefined, out: string[]): void {
  out.push("## 6. SQS-compatible endpoint", "");
  const r = outcome?.value;
  if (!r) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  const ratio = (a: Spread, b: Spread) => (a.median / b.median).toFixed(2);
  out.push(
    `${r.messages.toLocaleString("en-US")} messages per run, ${r.consumers} concurrent clients, ${r.batch} per call, against \`wrangler dev\`:`,
    "through the real `@aws-sdk/client-sqs` (SigV4 signing and verification included) and through the native",
    "API with the same batch size on the same server. Messages (tasks) per second, median (min–max) over the runs.",
    "",
    "| | SQS (SDK) | native API | SQS / native |",
    "| --- | --: | --: | --: |",
    `| send: SendMessageBatch(10) / enqueue 10 | ${fmtSpread(r.sqs.sendPerS)} | ${fmtSpread(r.native.sendPerS)} | ${ratio(r.sqs.sendPerS, r.native.sendPerS)} |`,
    `| burn-down: ReceiveMessage(10) + DeleteMessageBatch(10) / lease 10 + ack 10 | ${fmtSpread(r.sqs.burnPerS)} | ${fmtSpread(r.native.burnPerS)} | ${ratio(r.sqs.burnPerS, r.native.burnPerS)} |`,
    "",
    "D1 rows written per message over SQS: 4.3 at batch 10 — the native path's 4 plus one counter row per call —",
    "read from D1's `meta.rows_written` by `test/sqs/cost.test.ts` (D1's meta is not visible through `wrangler dev`).",
    "",
  );
}
