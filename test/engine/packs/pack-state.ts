import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { expect } from "vitest";
import { openDb } from "../../../src/db/client";
import { decodePack, packFigures, PACK_COLUMNS, type PackRowRead } from "../../../src/engine/packs/pack-row";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { getQueueConfig } from "../../../src/engine/queue-config";
import { T0 } from "../../helpers";

/** What the ack-splice tests read of a queue's packs (test/engine/packs/ack-splice*.test.ts). */

export const db = () => openDb(env.DB);
export const store = () => packTaskStore(db());
export const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ payload: { i: from + i } }));
export const T = T0 + 7 * 86_400_000; // the ack-splice files' own time range

type Row = PackRowRead & { next_at: number | null; rare_at: number | null; live: number; ready: number; n: number };

export async function packsOf(queue: string): Promise<Row[]> {
  return db().all<Row>(
    sql`SELECT ${sql.raw(PACK_COLUMNS)}, next_at, rare_at, live, ready, n FROM packs WHERE queue = ${queue}
      ORDER BY created_at, id`,
  );
}

/** A queue's packs as the store would answer them, ids and tokens aside: slot by slot, with the row's figures. */
export async function packState(queue: string) {
  return (await packsOf(queue)).map((row) => {
    const pack = decodePack(row);
    return {
      figures: { live: row.live, ready: row.ready, next_at: row.next_at, rare_at: row.rare_at, n: row.n },
      finished_at: row.finished_at,
      ver: row.ver,
      slots: pack.slots.map((s) => ({ st: s.st, a: s.a, body: s.body, lease: s.lease && { ...s.lease, k: "-" } })),
    };
  });
}

/** Every pack's stored figures are packFigures of its slots as stored (and the queue has packs). */
export async function expectFiguresFromSlots(queue: string, now: number) {
  const config = await getQueueConfig(db(), queue);
  const rows = await packsOf(queue);
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    const f = packFigures(decodePack(row), config, now);
    expect({
      live: row.live,
      ready: row.ready,
      next_at: row.next_at,
      rare_at: row.rare_at,
      fin: row.finished_at,
    }).toEqual({ live: f.live, ready: f.ready, next_at: f.nextAt, rare_at: f.rareAt, fin: f.finishedAt });
  }
}

export async function countersOf(queue: string) {
  const rows = await db().all<Record<string, unknown>>(
    sql`SELECT * FROM task_counters WHERE queue = ${queue} ORDER BY type, minute`,
  );
  return rows.map((row): Record<string, unknown> => ({ ...row, queue: "-" }));
}
