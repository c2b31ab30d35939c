import { api, must } from "./api";
import { esc } from "./dom";
import type { PageLife } from "./page-life";
import type { QueueStats } from "./wire";

type Flow = QueueStats["flow"];

/**
 * The queue page's flow control (docs/flow-control.md): whether the queue is paused, with a button to pause
 * or resume it, and its busiest keys from the stats (at most 20, the stats' bound) — due, running, limit,
 * tokens, at their limit or paused — each with its own pause/resume button. Drawn from the stats the page
 * already reads (`render`); a button's change re-reads them (`reload`).
 *
 * @example
 * const flow = flowSection(life, path, () => counts.read());
 * flow.render(stats.flow, signal);
 */
export function flowSection(life: PageLife, path: string, reload: () => Promise<void>) {
  const pause = (paused: boolean, key?: string): void =>
    life.run(async () => {
      must(await api<unknown>("POST", `${path}/pause`, { body: key === undefined ? { paused } : { paused, key } }));
      life.say(`${paused ? "Paused" : "Resumed"} ${key === undefined ? "the queue" : `key ${key}`}.`);
      await reload();
    });

  return {
    render(flow: Flow, signal?: AbortSignal): void {
      const state = life.find("flow-state", signal);
      state.textContent = flow.paused ? "Paused: nothing is handed out." : "Running.";
      state.dataset.paused = String(flow.paused);
      const queueButton = life.find<HTMLButtonElement>("flow-queue-pause", signal);
      queueButton.textContent = flow.paused ? "Resume queue" : "Pause queue";
      queueButton.onclick = () => pause(!flow.paused);
      const body = life.find("flow-keys", signal);
      body.innerHTML = flow.keys.length
        ? flow.keys.map(keyRow).join("")
        : `<tr><td colspan="7">No keyed tasks.</td></tr>`;
      for (const button of body.querySelectorAll<HTMLButtonElement>("button[data-key]")) {
        button.onclick = () => pause(button.dataset.paused !== "true", button.dataset.key);
      }
    },
  };
}

function keyRow(k: Flow["keys"][number]): string {
  const status = k.paused ? "paused" : k.at_limit ? "at limit" : "";
  return (
    `<tr data-key="${esc(k.key)}"><th scope="row">${esc(k.key)}</th><td>${k.due}</td><td>${k.running}</td>` +
    `<td>${k.concurrency ?? "—"}</td><td>${k.tokens ?? "—"}</td><td data-status>${status}</td>` +
    `<td><button data-key="${esc(k.key)}" data-paused="${k.paused}">${k.paused ? "Resume" : "Pause"}</button></td></tr>`
  );
}

/** The section's markup, for the page's layout. */
export const FLOW_LAYOUT =
  `<section aria-labelledby="flow-h"><h2 id="flow-h">Flow control</h2>` +
  `<p><span id="flow-state"></span> <button id="flow-queue-pause"></button></p>` +
  `<table aria-label="Keys"><thead><tr><th scope="col">Key</th><th scope="col">Due</th><th scope="col">Running</th>` +
  `<th scope="col">Concurrency</th><th scope="col">Tokens</th><th scope="col">Status</th><th scope="col"><span class="sr">Pause</span></th></tr></thead>` +
  `<tbody id="flow-keys"></tbody></table><p>The 20 busiest keys (most due, then running).</p></section>`;
