// The token prompt and the hash router: which page to draw, and what to do on a refused token.

import { calmon } from "./api.js";
import { ui } from "./ui.js";
import "./catalogue.js";
import "./models.js";
import "./model.js";
import "./window.js";
import "./analyses.js";
import "./segments.js";
import "./trust.js";

const { app, h } = ui;
const forget = document.getElementById("forget-token");

// ---- the token ----------------------------------------------------------------------------
function showLogin(message) {
  const input = h("input", {
    type: "password", id: "token-input", autocomplete: "off", required: true, size: 48,
    "aria-label": "read token",
  });
  const form = h(
    "form",
    {
      id: "token-form",
      onsubmit: (event) => {
        event.preventDefault();
        calmon.setToken(input.value);
        route();
      },
    },
    h("h1", {}, "A read token, please"),
    message ? h("p", { class: "error", role: "alert", id: "token-error" }, message) : null,
    h("p", {}, "The pages read calmon's API with a token that has the ", h("code", {}, "read"),
      " scope. It is kept for this browser tab only (session storage) and sent to nowhere but this server. Make one with ",
      h("code", {}, "calmon token create --name ui --scopes read"), "."),
    h("label", { for: "token-input" }, "Token "),
    input,
    " ",
    h("button", { type: "submit" }, "Use this token"),
  );
  app.replaceChildren(form);
  input.focus();
}

function authMessage(error) {
  if (error.status === 403) {
    return `This token is valid but may not read (403: ${error.message}). Use a token with the read scope.`;
  }
  return `calmon refused this token (401: ${error.message}). Check that it was copied whole and is not revoked.`;
}

// An address the UI does not know says so (it once showed the models list as if it were asked).
function notFound(hash) {
  app.replaceChildren(h("section", { id: "not-found" },
    h("h1", {}, "No such page"),
    h("p", { role: "alert" }, `calmon's web UI has no page at ${hash}. `, h("a", { href: "#/" }, "All models"), ".")));
}

// ---- the worker, from every page --------------------------------------------------------------
const workerStatus = document.getElementById("worker-status");
const age = (seconds) => (seconds < 90 ? `${Math.round(seconds)} s` : seconds < 5400 ? `${Math.round(seconds / 60)} min` : `${(seconds / 3600).toFixed(1)} h`);
function workerText(s) {
  if (s.workers_alive === 0 && s.dirty_windows > 0) return ["down", `no worker alive: ${s.dirty_windows} windows waiting`];
  const parts = [];
  if (s.dirty_windows > 0) parts.push(`${s.dirty_windows} window${s.dirty_windows === 1 ? "" : "s"} waiting (oldest ${age(s.worker_lag_seconds)})`);
  if (s.failing_windows > 0) parts.push(`${s.failing_windows} failing`);
  if (s.parked_windows > 0) parts.push(`${s.parked_windows} parked`);
  if (!parts.length) return ["ok", "worker: up to date"];
  return [s.failing_windows > 0 || s.parked_windows > 0 ? "failing" : "behind", `worker: ${parts.join(", ")}`];
}

async function showWorker() {
  try {
    const s = await calmon.get("/v1/status");
    const [state, text] = workerText(s);
    workerStatus.textContent = text;
    workerStatus.dataset.state = state;
    workerStatus.title = `${s.models} models; ${s.workers_alive} worker${s.workers_alive === 1 ? "" : "s"} alive; ` +
      `${s.dirty_windows} waiting, ${s.failing_windows} failing, ${s.parked_windows} parked`;
  } catch {
    workerStatus.textContent = "";  // no token yet, or the service is away: the page says so
    delete workerStatus.dataset.state;
  }
}

// ---- router -------------------------------------------------------------------------------
// Each navigation's number: a page that finishes after a newer navigation began (a quick
// second click) must not mark the document ready for the newer hash, nor show its error;
// and if the newer page was already drawn, the late one has just drawn over it.
let navigations = 0;
let drawn = 0;

async function route() {
  const navigation = ++navigations;
  const started = performance.now();
  delete document.body.dataset.ready;
  ui.setZone("UTC");
  forget.hidden = !calmon.token();
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
  if (calmon.authRequired && !calmon.token()) {
    showLogin(null);
    return;
  }
  showWorker();
  try {
    if (parts[0] === "models" && parts.length === 2) await ui.pages.model(parts[1], params);
    else if (parts[0] === "models" && parts[2] === "analyses" && parts.length === 3) await ui.pages.analyses(parts[1], params);
    else if (parts[0] === "models" && parts[2] === "segments" && parts.length === 3) await ui.pages.segments(parts[1], params);
    else if (parts[0] === "models" && parts[2] === "trust" && parts.length === 3) await ui.pages.trust(parts[1], params);
    else if (parts[0] === "models" && parts[2] === "windows" && parts.length === 4) await ui.pages.window(parts[1], parts[3], params);
    else if (parts.length === 0) await ui.pages.models();
    else notFound(location.hash);
    if (navigation !== navigations) {
      if (drawn === navigations) route(); // draw the newest page again
      return;
    }
    drawn = navigation;
    document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
    document.body.dataset.ready = location.hash || "#/";
  } catch (error) {
    if (navigation !== navigations) return;
    if (error instanceof calmon.AuthError) {
      showLogin(authMessage(error));
      return;
    }
    app.replaceChildren(h("p", { class: "error", role: "alert" }, String(error.message || error)));
  }
}

// A refresh draws the page again where the reader is (its scroll position kept).
ui.refresh = async () => {
  const y = window.scrollY;
  await route();
  window.scrollTo(0, y);
};

forget.addEventListener("click", () => {
  calmon.forgetToken();
  route();
});
window.addEventListener("hashchange", route);
route();
