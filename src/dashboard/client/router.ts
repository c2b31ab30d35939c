import { token, whenUnauthorized } from "./api";
import { signOutButton, markLive, viewElement } from "./dom";
import { overviewPage } from "./overview-page";
import { PageLife } from "./page-life";
import { queuePage } from "./queue-page";
import { signInPage } from "./sign-in-page";
import { taskPage } from "./task-page";

/** The page shown now; ended when another is shown. */
let shown: PageLife | null = null;

/**
 * Shows the page the location's hash names (#/, #/queue/<name>, #/task/<id>), or sign-in without a token.
 * The page shown before is ended first: its calls are aborted, its timers and sockets stopped, and its
 * element leaves the document — whatever of it is still under way paints nothing (page-life.ts).
 */
export function route(): void {
  shown?.end();
  markLive(false);
  const life = new PageLife();
  shown = life;
  viewElement().replaceChildren(life.root);
  life.run(() => render(life));
}

async function render(life: PageLife): Promise<void> {
  signOutButton().hidden = token() === null;
  if (token() === null) return signInPage(life, route);
  const hash = location.hash.replace(/^#/, "") || "/";
  const queue = /^\/queue\/(.+)$/.exec(hash)?.[1];
  const task = /^\/task\/(.+)$/.exec(hash)?.[1];
  if (queue !== undefined) await queuePage(life, decodeURIComponent(queue));
  else if (task !== undefined) await taskPage(life, decodeURIComponent(task));
  else await overviewPage(life);
}

// A refused token is forgotten (api.ts), and the page asks for one again.
whenUnauthorized(route);
