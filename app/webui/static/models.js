// The models overview: every model and segment, worst first.

import { calmon } from "./api.js";
import { ui } from "./ui.js";

const { h, render, num, pct, signed, interval, day, when, enc, estimated, onEarlyEvidence, howTo, modelLink, SEVERITY, STATE_TEXT } = ui;

// ---- Models -------------------------------------------------------------------------------
const TREND_WINDOWS = 30;
const WINDOW_MS = { hour: 3600e3, day: 86400e3, week: 604800e3 };

// The start of the trend: TREND_WINDOWS windows before the newest computed one.
function trendStart(model, segment, status) {
  const anchor = status.latest_complete_window || segment.newest_judged_window;
  if (!anchor) return undefined;
  return new Date(Date.parse(anchor) - TREND_WINDOWS * WINDOW_MS[model.granularity]).toISOString();
}

async function overviewRow(model, segment, status) {
  const from = trendStart(model, segment, status);
  const series = await calmon.get(`/v1/models/${enc(model.name)}/metrics`, {
    metric: "average_precision", segment: segment.segment, from,
  });
  const judged = series.points.find((p) => p.window_start === segment.newest_judged_window) || null;
  const newest = series.points[series.points.length - 1] || null;
  // The newest window with labels complete (its pi is measured), and the newest still waiting
  // for them that has an early estimate.
  const mature = [...series.points].reverse().find((p) => p.mature) || null;
  const estimate = [...series.points].reverse().find((p) => !p.mature && p.early) || null;
  const observed = judged ? judged.calibrated : null;
  const reference = segment.reference_average_precision;
  const deficit = observed != null && reference != null ? observed - reference : null;
  return { model, segment, status, judged, newest, mature, estimate, observed, reference, deficit, points: series.points };
}

// A small line of the newest windows' values (mature ones; a missing value breaks it), with a
// dashed line at ``level`` (the reference): a trend read at a glance, its numbers in the title.
function sparkline(values, level, label) {
  const W = 96, H = 26, ns = "http://www.w3.org/2000/svg";
  const known = values.filter((v) => v != null);
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("class", "sparkline");
  svg.setAttribute("role", "img");
  if (!known.length) return svg;
  const all = level != null ? [...known, level] : known;
  const lo = Math.min(...all), hi = Math.max(...all);
  const y = (v) => (hi > lo ? H - 2 - ((v - lo) / (hi - lo)) * (H - 4) : H / 2);
  const x = (i) => (values.length > 1 ? (i / (values.length - 1)) * (W - 2) + 1 : W / 2);
  const add = (tag, attrs) => {
    const el = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    svg.append(el);
  };
  if (level != null) add("line", { x1: 0, x2: W, y1: y(level), y2: y(level), class: "spark-level" });
  let run = [];
  const flush = () => {
    if (run.length > 1) add("polyline", { points: run.join(" "), class: "spark-line" });
    if (run.length === 1) add("circle", { cx: run[0].split(",")[0], cy: run[0].split(",")[1], r: 1.5, class: "spark-dot" });
    run = [];
  };
  values.forEach((v, i) => (v == null ? flush() : run.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`)));
  flush();
  const title = document.createElementNS(ns, "title");
  title.textContent = `${label}: ${known.length} windows, newest ${num(known[known.length - 1])}` + (level != null ? `, reference ${num(level)}` : "");
  svg.append(title);
  return svg;
}

function trendCell(row) {
  const mature = (row.points || []).map((p) => (p.mature ? p : { calibrated: null, pi: null }));
  return h("td", { class: "trend", "data-field": "trend", "data-points": String(mature.filter((p) => p.calibrated != null).length) },
    sparkline(mature.map((p) => p.calibrated), row.reference, "calibrated AP"),
    h("br"),
    sparkline(mature.map((p) => p.pi), row.points && row.points.length ? row.points[row.points.length - 1].pi0 : null, "fraud rate pi"));
}

function stateCell(s) {
  const early = onEarlyEvidence(s);
  return h("td", { class: "state", "data-state": s.state, "data-signals": (s.signals || []).join(","), title: s.reason || undefined },
    STATE_TEXT[s.state], early ? h("span", { class: "early-note" }, ", on early evidence") : null);
}

// The newest window still waiting for labels: its estimates from the labels so far, marked "≈"
// (and dashed, as on the charts) so that they never read as measured.
function earlyCell(row) {
  const p = row.estimate;
  const tz = row.model.timezone;
  if (!p) return h("td", { "data-field": "early" }, "–");
  const e = p.early;
  const text = e.value == null && e.pi == null
    ? `no estimate yet${e.reason ? `: ${e.reason}` : ""}`
    : `≈ AP ${estimated(e, (v) => num(v, 3))}, pi ${pct(e.pi, 2)}`;
  return h("td", {
    class: "estimate-cell", "data-field": "early", "data-window": p.window_start,
    title: `estimate from labels so far of window ${day(p.window_start, tz)}, as of ${when(e.as_of, tz)}: not measured`,
  }, text, h("div", { class: "ci" }, `window ${day(p.window_start, tz)}`));
}

function newestCell(newest, tz) {
  const waiting = newest && !newest.mature;
  return h("td", { "data-field": "newest", "data-mature": newest ? String(newest.mature) : undefined },
    day(newest && newest.window_start, tz), waiting ? h("div", { class: "ci" }, "waiting for labels") : null);
}

// A registered model with no window yet still gets its line.
function emptyRow(model, status) {
  const segment = {
    segment: "all", state: "warming_up", reason: "no windows yet", newest_judged_window: null,
    reference_average_precision: null, awaiting_labels: { windows: 0, rows: 0 }, signals: [],
  };
  return { model, segment, status, judged: null, newest: null, mature: null, estimate: null, observed: null, reference: null, deficit: null };
}

async function modelsPage() {
  const models = await calmon.get("/v1/models");
  const perModel = await Promise.all(
    models.map(async (model) => {
      const base = `/v1/models/${enc(model.name)}`;
      const [alerts, status] = await Promise.all([calmon.get(`${base}/alerts`), calmon.get(`${base}/status`)]);
      if (!alerts.segments.length) return [emptyRow(model, status)];
      return Promise.all(alerts.segments.map((segment) => overviewRow(model, segment, status)));
    }),
  );
  // Worst first, a model's segments folded under it: models by their worst segment, and
  // within a model the whole ('all') first, then its segments worst first.
  const worse = (a, b) =>
    SEVERITY[a.segment.state] - SEVERITY[b.segment.state] || (a.deficit ?? Infinity) - (b.deficit ?? Infinity);
  const groups = perModel.map((rows) => [...rows].sort((a, b) =>
    (a.segment.segment === "all" ? -1 : 0) - (b.segment.segment === "all" ? -1 : 0) || worse(a, b) ||
    a.segment.segment.localeCompare(b.segment.segment)));
  const worst = (rows) => [...rows].sort(worse)[0];
  const empty = (rows) => (rows[0].newest ? 0 : 1);  // a model without windows yet: last
  groups.sort((a, b) => empty(a) - empty(b) || worse(worst(a), worst(b)) || a[0].model.name.localeCompare(b[0].model.name));
  const rows = groups.flat();
  const table = h(
    "table",
    { id: "models-table" },
    h("thead", {}, h("tr", {},
      ["model", "segment", "alert state", "calibrated AP (newest judged window)", "reference AP",
        "difference", "estimate from labels so far", "pi (newest mature window)", "pi0",
        `trend (${TREND_WINDOWS} windows): AP at pi0, pi`, "label coverage (newest mature window)", "awaiting labels", "newest window", "computed at"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((row) => {
      const s = row.segment;
      const key = { "data-model": row.model.name, "data-segment": s.segment };
      const folded = s.segment !== "all" && s.state !== "drop";  // a dropping segment shows
      const named = rows.filter((r) => r.model === row.model && r.segment.segment !== "all").length;
      const toggle = s.segment === "all" && named ? h("button", {
        type: "button", class: "fold", "data-fold": row.model.name,
        onclick: (event) => {
          const open = event.target.getAttribute("aria-expanded") !== "true";
          event.target.setAttribute("aria-expanded", String(open));
          for (const tr of document.querySelectorAll(`tr.segment-row[data-model="${CSS.escape(row.model.name)}"]`)) {
            if (tr.querySelector('td.state[data-state="drop"]') === null) tr.hidden = !open;
          }
        },
        "aria-expanded": "false",
      }, `▸ ${named} segment${named === 1 ? "" : "s"}`) : null;
      return h("tr", { class: `state-${s.state}` + (s.segment === "all" ? "" : " segment-row"), hidden: folded, ...key },
        h("td", {}, s.segment === "all" ? h("a", { href: modelLink(row.model.name, s.segment) }, row.model.name) : ""),
        h("td", {}, s.segment === "all" ? ["whole model ", toggle] : h("a", { href: modelLink(row.model.name, s.segment) }, s.segment)),
        stateCell(s),
        h("td", { class: "num", "data-field": "calibrated" },
          num(row.observed), row.judged ? h("span", { class: "ci" }, " ", interval(row.judged.calibrated_ci)) : null),
        h("td", { class: "num", "data-field": "reference" }, num(row.reference)),
        h("td", { class: "num", "data-field": "deficit" }, signed(row.deficit)),
        earlyCell(row),
        h("td", { class: "num", "data-field": "pi" }, pct(row.mature && row.mature.pi, 3)),
        h("td", { class: "num", "data-field": "pi0" }, pct(row.newest && row.newest.pi0, 3)),
        trendCell(row),
        h("td", { class: "num", "data-field": "coverage" }, pct(row.mature && row.mature.label_coverage, 1)),
        h("td", { class: "num", "data-field": "awaiting" }, `${s.awaiting_labels.windows} windows, ${s.awaiting_labels.rows} rows`),
        newestCell(row.newest, row.model.timezone),
        h("td", {}, when(row.status.latest_computed_at, row.model.timezone)));
    })),
  );
  render(
    h("h1", {}, "Models"),
    h("p", { class: "lede" }, `${models.length} models, ${rows.length} segments; worst first: paging segments, then the largest fall of calibrated AP below the reference.`),
    rows.length ? table : h("p", {}, "No model has windows yet."),
    howTo("a segment drops when the detector has accumulated enough evidence that its calibrated AP (AP at the fixed reference fraud rate pi0) is below its reference; a moved fraud rate pi alone never drops. A drop \"on early evidence\" rests on windows whose labels are still arriving: the frauds reported so far already score lower than the reference's. Their values are estimates of what the complete labels will show (from the labels so far, with 95% intervals), never measurements. Label coverage is the share of the newest mature window's rows with a label. The trend draws the newest mature windows' calibrated AP against the reference (dashed) and their fraud rate against pi0 (dashed); a model's segments are folded under its whole, and open with its button (a dropping segment always shows)."),
  );
}

ui.pages.models = modelsPage;
