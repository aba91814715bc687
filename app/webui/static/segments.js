// Segments side by side at the model's pi0 (Siblini et al.'s first use case): each segment's
// fraud rate, its calibrated metrics and their differences to the whole model or one segment.

import { calmon } from "./api.js";
import { ui } from "./ui.js";

const { h, render, num, pct, signed, interval, day, enc, howTo, modelLink } = ui;
const SHOWN = [
  ["average_precision", "AP"],
  ["precision", "precision"],
  ["recall", "recall"],
  ["f1", "F1"],
  ["roc_auc", "ROC AUC"],
];

function segmentsLink(name, baseline) {
  return `#/models/${enc(name)}/segments` + (baseline && baseline !== "all" ? `?baseline=${enc(baseline)}` : "");
}

// A value [CI]; under it the difference to the baseline [CI], marked when the interval leaves out 0.
function cell(metric, m, isBaseline) {
  const mark = m.decided ? (m.difference > 0 ? " ▲" : " ▼") : "";
  return h("td", { class: "num", "data-metric": metric, title: m.reason || undefined },
    h("span", { "data-field": "value" }, num(m.value)),
    m.ci ? h("span", { class: "ci" }, " ", interval(m.ci)) : null,
    h("br"),
    isBaseline
      ? h("span", { class: "how", "data-field": "difference" }, "baseline")
      : h("span", { "data-field": "difference", "data-decided": String(m.decided) },
        `${signed(m.difference)}${mark}`, m.difference_ci ? h("span", { class: "ci" }, " ", interval(m.difference_ci)) : null));
}

function row(side, baseline) {
  const isBaseline = side.segment === baseline;
  return h("tr", { "data-segment": side.segment },
    h("th", { scope: "row" }, side.segment === "all" ? "whole model" : side.segment),
    h("td", { class: "num", "data-field": "pi" }, pct(side.pi, 3)),
    h("td", { class: "num" }, `${side.positives} of ${side.labelled}`),
    SHOWN.map(([metric]) => cell(metric, side.metrics[metric], isBaseline)));
}

async function segmentsPage(name, params) {
  const baseline = params.get("baseline") || "all";
  const [model, out] = await Promise.all([
    calmon.get(`/v1/models/${enc(name)}`),
    calmon.get(`/v1/models/${enc(name)}/segments/compare`, { baseline }),
  ]);
  ui.setZone(model.timezone);
  const picker = h("select", {
    id: "baseline-picker",
    onchange: (event) => { location.hash = segmentsLink(name, event.target.value); },
  }, ["all", ...out.segments.map((s) => s.segment)].map((s) => h("option", { value: s, selected: s === baseline }, s === "all" ? "the whole model" : s)));
  const prior = out.prior_source === "pi0"
    ? `the model's reference fraud rate pi0 ${pct(out.prior, 3)}`
    : `the period's fraud rate ${pct(out.prior, 3)} (the model has no pi0 yet)`;
  render(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", h("a", { href: modelLink(name) }, name), " / segments"),
    h("h1", {}, `${name}: segments side by side`),
    h("p", { class: "lede" }, `Every value calibrated to ${prior}, over the ${out.windows} mature windows from ${day(out.first_window)} to ${day(out.last_window)}. `,
      "Compared with ", h("label", { class: "picker" }, picker), "."),
    h("table", { id: "segments-table" },
      h("thead", {}, h("tr", {}, ["segment", "its fraud rate", "frauds", ...SHOWN.map(([, label]) => `${label} at the prior, and its difference`)].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, row(out.whole, baseline), out.segments.map((s) => row(s, baseline)))),
    howTo(`the segments run at different fraud rates, so their measured precision or AP do not compare; calibrated to one prior they do. Under each value: its difference to ${baseline === "all" ? "the whole model" : `segment ${baseline}`}, with a 95% bootstrap interval (${out.replicates} replicates, one joint bootstrap since a segment is part of the whole); ▲ or ▼ marks a difference whose interval leaves out 0. Frauds that come in bursts (one card, many transactions) vary more than independent rows: each interval is widened by how much more the period's windows vary than their rows (with 3 windows or more).`));
}

ui.segmentsLink = segmentsLink;
ui.pages.segments = segmentsPage;
