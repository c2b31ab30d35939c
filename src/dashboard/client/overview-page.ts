import { TASK_STATES } from "../../contracts/states";
import { api, must } from "./api";
import { series, sparkline } from "./charts";
import { esc } from "./dom";
import { follow } from "./events-socket";
import { REFRESH_MS, type PageLife } from "./page-life";
import { Reader } from "./reader";
import type { Counts, HealthList, QueueHealth, QueueList, QueueStats, Throughput } from "./wire";

/**
 * The overview (#/): every queue with its counts, an hour of completions and failures, the oldest due
 * task's age and its health. Counts move live (one events socket per queue); the list itself is re-read
 * every REFRESH_MS.
 */
export async function overviewPage(life: PageLife): Promise<void> {
  life.paint(
    `<h1>Queues</h1><table aria-label="Queues"><thead><tr><th scope="col">Queue</th>` +
      TASK_STATES.map((s) => `<th scope="col">${s}</th>`).join("") +
      `<th scope="col">Completed/min (1 h)</th><th scope="col">Failures (1 h)</th><th scope="col">Oldest due</th><th scope="col">Health</th></tr></thead><tbody id="queues"></tbody></table>`,
  );
  const followed = new Set<string>();
  const list = new Reader(life, async (signal) => {
    const { queues } = must(await api<QueueList>("GET", "/v1/queues", { signal }));
    const health = await api<HealthList>("GET", "/v1/health/queues", { signal });
    const healthOf = new Map(health.ok ? health.body.queues.map((q) => [q.queue, q]) : []);
    const rows = await Promise.all(queues.map((q) => queueRow(q, healthOf.get(q.queue), signal)));
    life.find("queues", signal).innerHTML =
      rows.join("") || `<tr><td colspan="10">No queues yet: enqueue a task.</td></tr>`;
    for (const { queue } of queues) {
      if (followed.has(queue)) continue;
      followed.add(queue);
      follow(life, `/v1/queues/${encodeURIComponent(queue)}/events`, {
        onEvent: (event) => {
          if (event.event !== "counts") return;
          const row = life.query(`queue-${event.queue}`);
          for (const s of TASK_STATES) {
            const cell = row?.querySelector(`[data-state="${s}"]`);
            if (cell) cell.textContent = String(event.counts[s] ?? 0);
          }
        },
        onResync: () => list.refresh(),
      });
    }
  });
  await list.read();
  life.every(REFRESH_MS, () => list.refresh());
}

/** One queue's row: its counts, sparklines of the last hour, oldest due, health. */
async function queueRow(
  q: QueueList["queues"][number],
  health: QueueHealth | undefined,
  signal: AbortSignal,
): Promise<string> {
  const path = `/v1/queues/${encodeURIComponent(q.queue)}`;
  const [stats, throughput] = await Promise.all([
    api<QueueStats>("GET", `${path}/stats`, { signal }),
    api<Throughput>("GET", `${path}/throughput?hours=1`, { signal }),
  ]);
  const minutes = throughput.ok ? throughput.body.minutes : [];
  const completed = series(minutes, 1, "completed");
  const failed = series(minutes, 1, "failed");
  const failures = failed.reduce((a, b) => a + b, 0);
  const status = health?.status ?? "ok";
  const reasons = health ? health.reasons.map((r) => r.message).join("; ") : "";
  const trouble = status !== "ok" || (q.counts.dead ?? 0) > 0 || failures > 0;
  return (
    `<tr id="queue-${esc(q.queue)}"${trouble ? ' class="trouble"' : ""}><th scope="row"><a href="#/queue/${encodeURIComponent(q.queue)}">${esc(q.queue)}</a>` +
    `${trouble ? ' <span class="badge">in trouble</span>' : ""}</th>${countsCells(q.counts)}` +
    `<td class="spark">${sparkline(completed, "completed per minute, last hour", "#1b6e3a")}</td>` +
    `<td class="spark">${sparkline(failed, `${failures} failed attempts in the last hour`, "#b3261e")} ${failures}</td>` +
    `<td>${ago(stats.ok ? stats.body.oldest_due_at : null)}</td>` +
    `<td>${esc(status)}${reasons ? `<br><small>${esc(reasons)}</small>` : ""}</td></tr>`
  );
}

function countsCells(counts: Counts): string {
  return TASK_STATES.map((s) => `<td class="n" data-state="${s}">${counts[s] ?? 0}</td>`).join("");
}

/** How long ago `iso` was, in s, m or h; "-" for none. */
function ago(iso: string | null): string {
  if (!iso) return "-";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}
