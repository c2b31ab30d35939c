import { describe } from "vitest";
import { body, queuePath, rejects, taskPath, type Case } from "./validation-cases";

const leaseCases: Case[] = [
  { label: "lease max 0", method: "POST", path: queuePath("lease"), opts: body({ max: 0 }), message: /^max: / },
  {
    label: "lease max over 100",
    method: "POST",
    path: queuePath("lease"),
    opts: body({ max: 101 }),
    message: /^max: /,
  },
  {
    label: "a zero visibility timeout",
    method: "POST",
    path: queuePath("lease"),
    opts: body({ visibility_timeout_s: 0 }),
    message: /^visibility_timeout_s: /,
  },
  {
    label: "a long-poll over 20 s",
    method: "POST",
    path: queuePath("lease"),
    opts: body({ wait_s: 21 }),
    message: /^wait_s: /,
  },
  {
    label: "an unknown lease field",
    method: "POST",
    path: queuePath("lease"),
    opts: body({ max: 1, count: 5 }),
    message: /count/,
  },
  {
    label: "complete without lease_token",
    method: "POST",
    path: taskPath("complete"),
    opts: body({ result: 1 }),
    message: /^lease_token: /,
  },
  {
    label: "complete with an empty lease_token",
    method: "POST",
    path: taskPath("complete"),
    opts: body({ lease_token: "" }),
    message: /^lease_token: /,
  },
  {
    label: "complete with an unknown field",
    method: "POST",
    path: taskPath("complete"),
    opts: (f) => ({ body: { lease_token: f.leased.token, output: 1 } }),
    message: /output/,
  },
  {
    label: "fail without error",
    method: "POST",
    path: taskPath("fail"),
    opts: (f) => ({ body: { lease_token: f.leased.token } }),
    message: /^error: /,
  },
  {
    label: "fail with a negative retry_after_s",
    method: "POST",
    path: taskPath("fail"),
    opts: (f) => ({ body: { lease_token: f.leased.token, error: "x", retry_after_s: -1 } }),
    message: /^retry_after_s: /,
  },
  {
    label: "fail with a string retryable",
    method: "POST",
    path: taskPath("fail"),
    opts: (f) => ({ body: { lease_token: f.leased.token, error: "x", retryable: "no" } }),
    message: /^retryable: /,
  },
  {
    label: "heartbeat progress over 100",
    method: "POST",
    path: taskPath("heartbeat"),
    opts: (f) => ({ body: { lease_token: f.leased.token, progress: 101 } }),
    message: /^progress: /,
  },
  {
    label: "heartbeat extend_s 0",
    method: "POST",
    path: taskPath("heartbeat"),
    opts: (f) => ({ body: { lease_token: f.leased.token, extend_s: 0 } }),
    message: /^extend_s: /,
  },
  {
    label: "an empty ack",
    method: "POST",
    path: queuePath("ack"),
    opts: body({}),
    message: /^complete: give at least one item/,
  },
  {
    label: "an ack item without lease_token",
    method: "POST",
    path: queuePath("ack"),
    opts: (f) => ({ body: { complete: [{ id: f.leased.id }] } }),
    message: /^complete\[0\]\.lease_token: /,
  },
  {
    label: "an ack item with a bad id",
    method: "POST",
    path: queuePath("ack"),
    opts: () => ({ body: { fail: [{ id: "x", lease_token: "t", error: "e" }] } }),
    message: /^fail\[0\]\.id: /,
  },
  {
    label: "an ack over 100 items",
    method: "POST",
    path: queuePath("ack"),
    opts: (f) => ({
      body: { complete: Array.from({ length: 101 }, () => ({ id: f.leased.id, lease_token: f.leased.token })) },
    }),
    message: /at most 100 items/,
  },
];

describe("lease, heartbeat, complete, fail and ack: 400 invalid_request naming the field, nothing changed", () => {
  rejects(leaseCases);
});
