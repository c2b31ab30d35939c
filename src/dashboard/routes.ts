import { Hono } from "hono";
import { DASHBOARD_HTML } from "./page";

/** The dashboard's page and the `/` redirect to it. The page holds no data: it signs in with the token
 * (kept in sessionStorage) and reads everything through /v1. */
export const dashboardPages = new Hono()
  .get("/", (c) => c.redirect("/dashboard", 302))
  .get("/dashboard", (c) =>
    c.html(DASHBOARD_HTML, 200, {
      // The page runs only its own inline script and talks only to this origin.
      "Content-Security-Policy":
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; media-src blob:; img-src data:",
      "Cache-Control": "no-cache",
    }),
  );
