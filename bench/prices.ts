/**
 * Published list prices the bill uses (USD, beyond each plan's included amounts), each with the page it
 * comes from and the day it was read. docs/operations.md cites the same pages; change both together.
 */
export const PRICES_CHECKED = "2026-11-27";

export const PRICES = {
  /** developers.cloudflare.com/workers/platform/pricing/ — Workers Paid (Standard). */
  workerRequestPerM: 0.3,
  /** developers.cloudflare.com/durable-objects/platform/pricing/ — requests (RPC calls and alarms count). */
  objectRequestPerM: 0.15,
  /** The same page: incoming WebSocket messages are billed at a 20:1 ratio (20 messages, one request). */
  socketMessagesPerRequest: 20,
  /** The same page: SQLite-backed storage, billed since 2026-01-07 (each key put/deleted, each setAlarm). */
  objectRowWrittenPerM: 1.0,
  objectRowReadPerM: 0.001,
  /** developers.cloudflare.com/d1/platform/pricing/ — each index entry written is another row. */
  d1RowWrittenPerM: 1.0,
  d1RowReadPerM: 0.001,
  d1GbMonth: 0.75,
  /** developers.cloudflare.com/queues/platform/pricing/ — per 64 KB written, read or deleted. */
  queuesOpPerM: 0.4,
  /** aws.amazon.com/sqs/pricing/ — standard queue, per request (≤ 10 messages, per 64 KB chunk). */
  sqsRequestPerM: 0.4,
  /** upstash.com/pricing/qstash — pay as you go, $1 per 100,000 messages (each delivery attempt). */
  qstashMessagePerM: 10,
} as const;

export const PRICE_PAGES = [
  ["Workers", "https://developers.cloudflare.com/workers/platform/pricing/"],
  ["Durable Objects", "https://developers.cloudflare.com/durable-objects/platform/pricing/"],
  ["D1", "https://developers.cloudflare.com/d1/platform/pricing/"],
  ["Cloudflare Queues", "https://developers.cloudflare.com/queues/platform/pricing/"],
  ["SQS", "https://aws.amazon.com/sqs/pricing/"],
  ["QStash", "https://upstash.com/pricing/qstash"],
] as const;
