// What-if (the model's pooled curve at other fraud rates) and champion vs challenger, one segment.

import { calmon } from "./api.js";
import { charts } from "./charts.js";
import { ui } from "./ui.js";

const { h, render, num, pct, signed, interval, seconds, day, enc, howTo, modelLink, figure } = ui;
const METRICS = [["precision", "precision"], ["recall", "recall"], ["f1", "F1"], ["average_precision", "AP"]];
const GRID = 13; // fraud rates the chart asks for across the range
const GRID_REPLICATES = 200; // the chart's bands: enough for a band, a fifth of the default's cost
const percentText = (v) => pct(v, 3);

function analysesLink(name, segment, challenger) {
  const params = new URLSearchParams();
  if (segment && segment !== "all") params.set("segment", segment);
  if (challenger) params.set("challenger", challenger);
  const query = params.toString();
  return `#/models/${enc(name)}/analyses` + (query ? `?${query}` : "");
}

// ---- What-if ------------------------------------------------------------------------------
function priorRow(key, label, prior) {
  return h("tr", { "data-prior": key, "data-pi": prior.pi },
    h("th", { scope: "row" }, label),
    h("td", { class: "num", "data-field": "pi" }, percentText(prior.pi)),
    METRICS.map(([metric]) => {
      const v = prior.metrics[metric] || { value: null, ci: null, reason: "not in the answer" };
      return h("td", { class: "num", "data-metric": metric, title: v.reason || undefined },
        num(v.value), v.ci ? h("span", { class: "ci" }, " ", interval(v.ci)) : null);
    }));
}

function rangeTable(range) {
  const row = (label, field, value, ci, ends) => h("tr", { "data-field": field },
    h("th", { scope: "row" }, label),
    h("td", { class: "num", "data-value": field }, num(value), ci ? h("span", { class: "ci" }, " ", interval(ci)) : null),
    h("td", { class: "num" }, ends ? `${num(ends[0])} to ${num(ends[1])}` : "–"));
  return h("table", { id: "whatif-range", class: "summary" },
    h("tr", {}, ["over the range", "value [95% CI]", "at the two ends"].map((t) => h("th", {}, t))),
    row("integrated precision at the threshold", "precision", range.precision, range.precision_ci, range.precision_at_ends),
    row("integrated P-R area (mean AP over the range)", "average_precision", range.average_precision, range.average_precision_ci, range.average_precision_at_ends),
    row("minimum achievable area", "min_average_precision", range.min_average_precision, null, null),
    row("normalised area (0 worst, 1 perfect)", "normalised_average_precision", range.normalised_average_precision, null, null),
    row("a random classifier's area (the baseline to beat)", "random_average_precision", range.random_average_precision, null, null));
}

// The fraud rates the chart is drawn at: the range's ends and evenly between (0 is not a prior).
function grid(lo, hi) {
  const start = lo > 0 ? lo : hi / GRID;
  return Array.from({ length: GRID }, (_, i) => start + ((hi - start) * i) / (GRID - 1));
}

function whatIfChart(box, curve, marks) {
  const col = (metric, f) => curve.priors.map((p) => f(p.metrics[metric]));
  const value = (v) => (v ? v.value : null);
  const lo = (v) => (v && v.ci ? v.ci[0] : null);
  const hi = (v) => (v && v.ci ? v.ci[1] : null);
  charts.priorChart(box, {
    x: curve.priors.map((p) => p.pi), yLabel: "expected value (0–1)", yRange: [0, 1], markers: marks,
    lines: [
      { label: "AP", style: "calibrated", values: col("average_precision", value) },
      { label: "precision at the threshold", style: "regular", values: col("precision", value) },
    ],
    bands: [
      { lo: col("average_precision", lo), hi: col("average_precision", hi), color: "rgba(31, 95, 168, 0.22)" },
      { lo: col("precision", lo), hi: col("precision", hi), color: "#b35806", hatch: true },
    ],
  });
}

async function whatIfSection(base, segment, whatif) {
  const period = whatif.period;
  // The default answer holds pi0 and the current pi, once each (either may be missing or equal).
  const at = (pi) => whatif.priors.find((p) => p.pi === pi);
  const pi0 = at(period.pi0);
  const current = at(period.current_pi);
  const body = h("tbody", {},
    pi0 ? priorRow("pi0", "reference pi0", pi0) : null,
    current ? priorRow("current", "current pi (newest mature window)", current) : null);
  const input = h("input", { id: "whatif-pi", type: "number", min: "0.001", max: "99.999", step: "any", required: true, size: 8, "aria-label": "fraud rate in percent" });
  const error = h("span", { id: "whatif-error", class: "error", hidden: true });
  const form = h("form", {
    id: "whatif-form",
    onsubmit: async (event) => {
      event.preventDefault();
      delete document.body.dataset.whatif;
      // The value asked for, read once: the field may change while the request is out, and
      // the marker the tests wait on must name what was computed.
      const asked = input.value;
      const pi = Number(asked) / 100;
      error.hidden = true;
      try {
        const answer = await calmon.post(`${base}/whatif`, { segment, priors: [pi], range: null });
        body.querySelector('tr[data-prior="input"]')?.remove();
        body.append(priorRow("input", "your fraud rate", answer.priors[0]));
      } catch (e) {
        error.textContent = String(e.message || e);
        error.hidden = false;
      }
      document.body.dataset.whatif = asked;
    },
  }, h("label", { for: "whatif-pi" }, "What if the fraud rate were "), input, " % ", h("button", { type: "submit" }, "Compute"), " ", error);
  const [fig, box] = figure("Expected AP and precision against the fraud rate", "chart-whatif",
    "the same model (its pooled curve: the rates at which it catches fraud and flags good rows do not change) read at other fraud rates across the history's range. The solid line is AP, the dashed line precision at the threshold, each with its 95% bootstrap band (plain: AP, hatched: precision); dashed vertical lines mark pi0 and the current fraud rate. A fall along the x axis is the fraud rate's doing, not the model's.");
  const range = whatif.range;
  const section = h("section", { id: "whatif" },
    h("h2", {}, "What-if: the same model at other fraud rates"),
    h("p", { class: "lede", id: "whatif-period" },
      `Pooled ${period.windows} mature windows of segment ${period.segment} (${day(period.first_window)} to ${day(period.last_window)}): ` +
        `${period.labelled} labelled rows, ${period.positives} frauds, pi ${percentText(period.pi)} (windows' mean ${percentText(period.pi_mean)} ± ${percentText(period.pi_std)}).`),
    form,
    h("table", { id: "whatif-priors", class: "summary" },
      h("thead", {}, h("tr", {}, ["", "fraud rate", ...METRICS.map(([, label]) => `${label} [95% CI]`)].map((t) => h("th", {}, t)))),
      body),
    range ? h("p", {}, `Over the fraud rates of the history, ${percentText(range.pi_lo)} to ${percentText(range.pi_hi)} (${range.source === "history" ? "the windows' mean ± 3 standard deviations" : "asked"}):`) : null,
    range ? rangeTable(range) : h("p", { id: "whatif-range-reason" }, "No range: the period has a single window."),
    howTo("each row is the model's pooled curve read at one fraud rate, with a 95% bootstrap interval. Recall does not depend on the fraud rate; precision, F1 and AP do. The range rows average over the fraud rates this model has seen: a figure you can promise whatever the rate does within them."),
    fig);
  return { section, chartBox: range ? box : null };
}

// ---- What the fraud rate may do: a trajectory, or a range weighted by how likely ------------
// A rate typed in percent, as a fraction.
const percentInput = (id, label) => h("input", { id, type: "number", min: "0.001", max: "99.999", step: "any", required: true, size: 6, "aria-label": label });

function outlookTable(id, rows) {
  return h("table", { id, class: "summary" },
    h("tr", {}, ["", "value [95% CI]"].map((t) => h("th", {}, t))),
    rows.map(([field, label, value, ci]) => h("tr", { "data-field": field },
      h("th", { scope: "row" }, label),
      h("td", { class: "num", "data-value": field }, num(value), ci ? h("span", { class: "ci" }, " ", interval(ci)) : null))));
}

function outlookSection(base, segment) {
  const out = h("div", { id: "outlook-answer" });
  const error = h("span", { id: "outlook-error", class: "error", hidden: true });
  const from = percentInput("trajectory-from", "fraud rate now in percent");
  const to = percentInput("trajectory-to", "fraud rate at the end in percent");
  const days = h("input", { id: "trajectory-days", type: "number", min: "1", max: "3650", step: "1", value: "30", required: true, size: 4, "aria-label": "days" });
  const shape = h("select", { id: "trajectory-shape", "aria-label": "how it moves" },
    h("option", { value: "log" }, "growing steadily (log)"), h("option", { value: "linear" }, "in a straight line"));
  const ask = async (kind, body) => {
    delete document.body.dataset.outlook;
    error.hidden = true;
    try {
      const answer = await calmon.post(`${base}/whatif`, { segment, priors: [], ...body });
      out.replaceChildren(kind === "trajectory"
        ? outlookTable("outlook-trajectory", [
          ["precision", "temporal precision at the threshold", answer.trajectory.precision, answer.trajectory.precision_ci],
          ["average_precision", "mean AP over the span", answer.trajectory.average_precision, answer.trajectory.average_precision_ci],
          ["random_average_precision", "a random classifier's (the baseline to beat)", answer.trajectory.random_average_precision, null]])
        : outlookTable("outlook-range", [
          ["precision", "integrated precision at the threshold", answer.range.precision, answer.range.precision_ci],
          ["average_precision", "integrated P-R area", answer.range.average_precision, answer.range.average_precision_ci],
          ["random_average_precision", "a random classifier's area (the baseline to beat)", answer.range.random_average_precision, null]]));
    } catch (e) {
      error.textContent = String(e.message || e);
      error.hidden = false;
    }
    document.body.dataset.outlook = kind;
  };
  const trajectoryForm = h("form", {
    id: "trajectory-form",
    onsubmit: (event) => {
      event.preventDefault();
      ask("trajectory", { range: null, trajectory: { points: [[0, Number(from.value) / 100], [Number(days.value), Number(to.value) / 100]], interpolation: shape.value } });
    },
  }, "If the fraud rate goes from ", from, " % to ", to, " % in ", days, " days, ", shape, " ", h("button", { type: "submit" }, "Compute"));
  const lo = percentInput("range-lo", "lowest fraud rate in percent");
  const likely = percentInput("range-likely", "most likely fraud rate in percent");
  const hi = percentInput("range-hi", "highest fraud rate in percent");
  const rangeForm = h("form", {
    id: "range-form",
    onsubmit: (event) => {
      event.preventDefault();
      const [a, m, b] = [lo, likely, hi].map((x) => Number(x.value) / 100);
      // A triangle: most weight at the likely rate, none at the ends (Lampert's w(pi)).
      ask("range", { range: { pi_lo: a, pi_hi: b, weight: [[a, 0], [m, 1], [b, 0]] } });
    },
  }, "If the fraud rate lies between ", lo, " % and ", hi, " %, most likely ", likely, " %, ", h("button", { type: "submit" }, "Compute"));
  return h("section", { id: "outlook" },
    h("h2", {}, "What the fraud rate may do"),
    trajectoryForm, rangeForm, error, out,
    howTo("a trajectory averages the model's precision and AP over time as the fraud rate moves (Lampert eq. 4); a weighted range averages them over the rates you think possible, weighted by how likely (a triangle peaking at the most likely rate). Each comes with its 95% bootstrap interval and a random classifier's value, the baseline to beat: its precision at any fraud rate is that rate."));
}

// ---- Champion vs challenger ---------------------------------------------------------------
function comparisonRow(key, label, c) {
  return h("tr", { "data-comparison": key },
    h("th", { scope: "row" }, label),
    h("td", { class: "num", "data-field": "champion" }, num(c.champion)),
    h("td", { class: "num", "data-field": "challenger" }, num(c.challenger)),
    h("td", { class: "num", "data-field": "difference" }, signed(c.difference), c.ci ? h("span", { class: "ci" }, " ", interval(c.ci, signed)) : null),
    h("td", { "data-field": "leader" }, `${c.leader}${c.decided ? " (decided)" : " (not decided: the interval holds 0)"}`));
}

function compareSection(name, segment, models, challenger, compare, timezone) {
  const picker = h("select", {
    id: "challenger-picker",
    onchange: (event) => { location.hash = analysesLink(name, segment, event.target.value); },
  }, h("option", { value: "" }, "— pick a model —"),
  models.filter((m) => m.name !== name).map((m) => h("option", { value: m.name, selected: m.name === challenger }, m.name)));
  const parts = [h("h2", {}, "Champion vs challenger"), h("p", {}, h("label", {}, `${name} (champion) against `, picker))];
  if (!compare) return { section: h("section", { id: "compare" }, parts), chartBox: null };
  const r = compare.over_range;
  const flips = compare.inversions.length
    ? compare.inversions.map((f) => h("li", { "data-pi": f.pi }, `at ${percentText(f.pi)}: the ${f.below} leads below, the ${f.above} above`))
    : [h("li", {}, "none: one model leads at every fraud rate")];
  const [fig, box] = figure(`Calibrated ${compare.metric.replace("_", " ")} of both, window by window`, "chart-compare",
    `solid: ${compare.champion} (champion), dash-dot: ${compare.challenger} (challenger), each calibrated to its own pi0 with its 95% band (plain: champion, hatched: challenger). Where the lines part, one ranks fraud better on that day's traffic.`);
  parts.push(
    h("p", { class: "lede", id: "compare-summary" }, compare.summary),
    h("table", { id: "compare-table", class: "summary" },
      h("tr", {}, ["average precision", compare.champion, compare.challenger, "difference (challenger − champion) [95% CI]", "leader"].map((t) => h("th", {}, t))),
      compare.at_pi0 ? comparisonRow("at_pi0", `at pi0 ${percentText(compare.at_pi0.pi)}`, compare.at_pi0) : null,
      comparisonRow("at_current_pi", `at the current pi ${percentText(compare.at_current_pi.pi)}`, compare.at_current_pi),
      r ? comparisonRow("over_range", `over ${percentText(r.pi_lo)} to ${percentText(r.pi_hi)} (area)`, r) : null),
    h("h3", {}, "Fraud rates where the order flips"),
    h("ul", { id: "compare-flips" }, flips),
    howTo("the difference is the challenger's AP minus the champion's on the two pooled curves, with a 95% bootstrap interval; 'decided' means the interval excludes 0. A flip is a fraud rate where the better model changes: below it one leads, above it the other."),
    fig);
  return { section: h("section", { id: "compare" }, parts), chartBox: box, timezone };
}

function compareChart(box, compare, timezone) {
  const s = compare.series;
  const get = (side, f) => s.map((p) => f(p[side]));
  charts.timeChart(box, {
    x: s.map((p) => seconds(p.window_start)), timezone, yLabel: compare.metric === "average_precision" ? "calibrated AP (0–1)" : `calibrated ${compare.metric} (0–1)`, yRange: [0, 1],
    lines: [
      { label: `${compare.champion} (champion)`, style: "calibrated", values: get("champion", (v) => v.value) },
      { label: `${compare.challenger} (challenger)`, style: "second", values: get("challenger", (v) => v.value) },
    ],
    bands: [
      { lo: get("champion", (v) => (v.ci ? v.ci[0] : null)), hi: get("champion", (v) => (v.ci ? v.ci[1] : null)), color: "rgba(31, 95, 168, 0.22)" },
      { lo: get("challenger", (v) => (v.ci ? v.ci[0] : null)), hi: get("challenger", (v) => (v.ci ? v.ci[1] : null)), color: "#1b7837", hatch: true },
    ],
  });
}

async function analysesPage(name, params) {
  const segment = params.get("segment") || "all";
  const challenger = params.get("challenger");
  const base = `/v1/models/${enc(name)}`;
  const [model, models, whatif] = await Promise.all([
    calmon.get(base), calmon.get("/v1/models"), calmon.post(`${base}/whatif`, { segment }),
  ]);
  ui.setZone(model.timezone);
  const range = whatif.range;
  const [curve, compare] = await Promise.all([
    range ? calmon.post(`${base}/whatif`, { segment, priors: grid(range.pi_lo, range.pi_hi), range: null, replicates: GRID_REPLICATES }) : null,
    challenger ? calmon.get(`${base}/compare`, { challenger, segment }) : null,
  ]);
  const what = await whatIfSection(base, segment, whatif);
  const vs = compareSection(name, segment, models, challenger, compare, model.timezone);
  render(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", h("a", { href: modelLink(name, segment) }, name), " / analyses"),
    h("h1", {}, `${name}: what-if and champion vs challenger`, segment !== "all" ? ` (segment ${segment})` : ""),
    what.section, outlookSection(base, segment), vs.section);
  if (what.chartBox) {
    const marks = [
      { x: whatif.period.pi0, label: "pi0" },
      { x: whatif.period.current_pi, label: "current pi" },
    ].filter((m) => m.x != null);
    whatIfChart(what.chartBox, curve, marks);
  }
  if (vs.chartBox) compareChart(vs.chartBox, compare, model.timezone);
}

ui.analysesLink = analysesLink;
ui.pages.analyses = analysesPage;
