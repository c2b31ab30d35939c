import { api, errorText, must } from "./api";
import { esc } from "./dom";
import type { PageLife } from "./page-life";
import type { QueueConfig } from "./wire";

type Value = QueueConfig[keyof QueueConfig];

/** How a value is shown in its field, and compared with what the field holds on save. */
const shown = (v: Value): string => (typeof v === "object" && v !== null ? JSON.stringify(v) : String(v ?? ""));

/**
 * The queue's configuration as a form, one field per key; Save sends what changed (PUT .../config). A
 * refused value is shown on its field (aria-invalid, the API's message next to it) and nothing is stored.
 */
export async function queueConfigForm(life: PageLife, path: string): Promise<void> {
  let config = must(await api<QueueConfig>("GET", `${path}/config`, { signal: life.signal }));
  const form = life.find<HTMLFormElement>("config");
  form.innerHTML =
    Object.entries(config)
      .map(
        ([key, value]) =>
          `<label for="cfg-${key}">${esc(key)}</label>${field(key, value)}<span class="field-error" id="err-${key}"></span>`,
      )
      .join("") + `<p><button class="primary">Save configuration</button></p>`;
  form.onsubmit = (ev) => {
    ev.preventDefault();
    life.run(async () => {
      const patch: Record<string, unknown> = {};
      for (const [key, before] of Object.entries(config)) {
        const input = life.find<HTMLInputElement | HTMLSelectElement>(`cfg-${key}`);
        const raw = input.value.trim();
        if (raw === shown(before)) continue;
        patch[key] = raw === "" ? null : parse(raw, input.getAttribute("data-kind"));
      }
      for (const e of form.querySelectorAll(".field-error")) e.textContent = "";
      for (const e of form.querySelectorAll("[aria-invalid]")) e.removeAttribute("aria-invalid");
      const answer = await api<QueueConfig>("PUT", `${path}/config`, { body: patch });
      if (answer.ok) {
        config = answer.body;
        life.say("Configuration saved.");
        return;
      }
      const message = errorText(answer);
      const refused = Object.keys(config).find((key) => message.includes(key));
      if (refused && answer.body) {
        life.find(`err-${refused}`).textContent = answer.body.error.message;
        const input = life.find(`cfg-${refused}`);
        input.setAttribute("aria-invalid", "true");
        input.focus();
      }
      life.say(`Not saved: ${message}`, true);
    });
  };
}

/** A select for `mode`; otherwise an input that remembers the kind of value it edits. */
function field(key: string, value: Value): string {
  if (key === "mode") {
    const option = (m: string) => `<option${value === m ? " selected" : ""}>${m}</option>`;
    return `<select id="cfg-${key}" name="${key}">${option("pull")}${option("push")}</select>`;
  }
  const kind = typeof value === "number" ? "number" : typeof value === "object" && value !== null ? "json" : "text";
  return `<input id="cfg-${key}" name="${key}" data-kind="${kind}" value="${esc(shown(value))}" aria-describedby="err-${key}">`;
}

/** A field's text as the kind of value it edits; what does not parse is sent as typed, for the API to refuse. */
function parse(raw: string, kind: string | null): unknown {
  if (kind === "number") return Number.isNaN(Number(raw)) ? raw : Number(raw);
  if (kind === "json") {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return raw;
    }
  }
  return raw;
}
