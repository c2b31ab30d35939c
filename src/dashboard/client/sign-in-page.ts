import { api, errorText, forgetToken, setToken } from "./api";
import { say } from "./dom";
import type { PageLife } from "./page-life";
import type { QueueList } from "./wire";

/** The sign-in form: the token is tried on GET /v1/queues and kept (sessionStorage) only if it works;
 * then `signedIn` shows the page asked for. */
export function signInPage(life: PageLife, signedIn: () => void): void {
  life.paint(
    `<h1>Sign in</h1><form id="signin"><p>Paste the API token (EDGEQ_TOKEN). It is kept in this tab only (sessionStorage).</p>` +
      `<label for="token">API token</label><input id="token" type="password" autocomplete="off" required> <button class="primary">Sign in</button></form>`,
  );
  const input = life.find<HTMLInputElement>("token");
  life.find<HTMLFormElement>("signin").onsubmit = (ev) => {
    ev.preventDefault();
    life.run(async () => {
      setToken(input.value.trim());
      const answer = await api<QueueList>("GET", "/v1/queues", { signal: life.signal });
      if (!answer.ok) {
        forgetToken();
        say(`Sign-in refused: ${errorText(answer)}`, true);
        return;
      }
      say("");
      signedIn();
    });
  };
  input.focus();
}
