import { TASK_STATES } from "../../contracts/states";
import { api, must } from "./api";
import { THROUGHPUT_LINES, throughputChart } from "./charts";
import { esc } from "./dom";
import { follow } from "./events-socket";
import type { PageLife } from "./page-life";
import { Reader } from "./reader";
import { queueConfigForm } from "./queue-config";
import { tasksTable } from "./queue-tasks";
import { FLOW_LAYOUT, flowSection } from "./queue-flow";
import type { Counts, QueueStats, Throughput } from "./wire";

/** How often the chart is re-read: its points are whole minutes, so once a minute shows every new one. */
const CHART_REFRESH_MS = 60_000;

/** How often the stats (flow control's keys with them) are re-read: the events carry the queue's counts, not
 * its keys', so the keys table follows a few seconds behind — as the overview's list does (10 s). */
const FLOW_REFRESH_MS = 10_000;

/**
 * A queue's page (#/queue/<name>): live counts, the throughput chart (1 h or 24 h), the tasks table with
 * its filters, search and bulk actions, flow control (pause, busiest keys) and the configuration form.
 */
export async function queuePage(life: PageLife, queue: string): Promise<void> {
  const path = `/v1/queues/${encodeURIComponent(queue)}`;
  let hours = 1;
  life.paint(layout(queue));

  const renderCounts = (counts: Counts, signal?: AbortSignal): void => {
    life.find("counts", signal).innerHTML = TASK_STATES.map(
      (s) => `<div><dt>${s}</dt><dd id="count-${s}">${counts[s] ?? 0}</dd></div>`,
    ).join("");
  };
  const counts = new Reader(life, async (signal) => {
    const stats = must(await api<QueueStats>("GET", `${path}/stats`, { signal }));
    renderCounts(stats.counts, signal);
    flow.render(stats.flow, signal);
  });
  const flow = flowSection(life, path, () => counts.read());
  const chart = new Reader(life, async (signal) => {
    const { minutes } = must(await api<Throughput>("GET", `${path}/throughput?hours=${hours}`, { signal }));
    const drawn = throughputChart(minutes, hours);
    life.find("chart", signal).innerHTML = drawn.svg;
    life.find("chart-max", signal).textContent = `Scale: 0 to ${drawn.max} per minute, last ${hours} h.`;
  });
  const tasks = tasksTable(life, queue, () => counts.read());

  for (const button of life.root.querySelectorAll<HTMLButtonElement>("[data-hours]")) {
    button.onclick = () => {
      hours = Number(button.dataset.hours);
      for (const other of life.root.querySelectorAll("[data-hours]")) {
        other.setAttribute("aria-pressed", String(other === button));
      }
      life.run(() => chart.read());
    };
  }
  await Promise.all([counts.read(), chart.read(), tasks.read(), queueConfigForm(life, path)]);
  follow(life, `${path}/events`, {
    onEvent: (event) => {
      if (event.event === "counts") renderCounts(event.counts);
      else tasks.reloadSoon();
    },
    onResync: () => {
      counts.refresh();
      tasks.refreshFromStart();
    },
  });
  life.every(CHART_REFRESH_MS, () => chart.refresh());
  life.every(FLOW_REFRESH_MS, () => counts.refresh());
}

function layout(queue: string): string {
  const legend = THROUGHPUT_LINES.map(
    (line) => `<span><i class="swatch" style="background:${line.color}"></i>${line.measure}</span>`,
  ).join("");
  return (
    `<p><a href="#/">All queues</a></p><h1>Queue ${esc(queue)}</h1><dl class="counts" id="counts"></dl>` +
    `<section aria-labelledby="chart-h"><h2 id="chart-h">Throughput per minute</h2><div role="group" aria-label="Time range"><button data-hours="1" aria-pressed="true">1 h</button> <button data-hours="24" aria-pressed="false">24 h</button></div>` +
    `<svg class="chart" id="chart" viewBox="0 0 600 160" preserveAspectRatio="none" role="img" aria-label="enqueued, completed and failed per minute"></svg><p id="chart-max"></p>` +
    `<p class="legend">${legend}</p></section>` +
    FLOW_LAYOUT +
    `<section aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks</h2><form id="filters"><label>State <select name="state"><option value="">any</option>` +
    TASK_STATES.map((s) => `<option>${s}</option>`).join("") +
    `</select></label><label>Type <input name="type" size="10"></label><label>Group <input name="group" size="10"></label><button>Filter</button></form>` +
    `<form id="search"><label>Find task by id or dedupe key <input name="q" size="28"></label><button>Find</button></form>` +
    `<p><button id="cancel-selected" class="danger">Cancel selected</button> <button id="retry-selected">Retry selected</button> <button id="cancel-group" class="danger">Cancel group</button> <button id="redrive-dead">Redrive dead</button> <button id="redrive-expired">Redrive expired</button> <button id="purge" class="danger">Purge finished</button></p>` +
    `<form id="bulk"><label>On every task the filter matches <select name="action" id="bulk-action"><option value="cancel">cancel</option><option value="retry">retry</option><option value="redrive">redrive</option></select></label> <button id="bulk-apply" class="danger">Apply to matching…</button></form>` +
    `<table aria-label="Tasks"><thead><tr><th scope="col"><span class="sr">Select</span></th><th scope="col">Task</th><th scope="col">Type</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Progress</th><th scope="col">Group</th><th scope="col">Run at</th></tr></thead><tbody id="tasks"></tbody></table>` +
    `<button id="next" hidden>Next page</button></section>` +
    `<section aria-labelledby="config-h"><h2 id="config-h">Configuration</h2><form id="config" class="config"></form></section>`
  );
}
