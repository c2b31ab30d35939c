/**
 * The dashboard's browser code, bundled by scripts/build-dashboard.mjs into the page's one inline script
 * (src/dashboard/client-bundle.generated.ts). It reads /v1 with the token kept in sessionStorage and
 * follows the events WebSockets; router.ts shows one page at a time.
 */
import { forgetToken } from "./api";
import { say, signOutButton } from "./dom";
import { route } from "./router";

signOutButton().onclick = () => {
  forgetToken();
  location.hash = "#/";
  route();
};
window.addEventListener("hashchange", () => {
  say("");
  route();
});
route();
