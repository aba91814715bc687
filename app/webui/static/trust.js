// Which metric to trust at this model's class ratio (the seed paper on class-imbalance
// sensitivity): every metric's s(r) over the ratio, and one metric's surface with the windows.

import { calmon } from "./api.js";
import { charts } from "./charts.js";
import { ui } from "./ui.js";

const { h, render, num, pct, enc, howTo, modelLink, figure } = ui;
const LABELS = {
  accuracy: "accuracy", precision: "precision", recall: "recall", f1: "F1", tss: "TSS (TPR − FPR)",
  hss: "Heidke skill score", youden: "Youden's J", calibrated_precision: "calibrated precision",
  fpr: "FPR", calibrated_f1: "calibrated F1",
};

function trustLink(name, metric) {
  return `#/models/${enc(name)}/trust` + (metric && metric !== "f1" ? `?metric=${enc(metric)}` : "");
}

// s at the model's ratio (the API computes the curves there too).
function atRatio(out, curve) {
  return curve.sensitivity[out.ratios.indexOf(out.ratio)];
}

async function trustPage(name, params) {
  const metric = params.get("metric") || "f1";
  const [model, out] = await Promise.all([
    calmon.get(`/v1/models/${enc(name)}`),
    calmon.get(`/v1/models/${enc(name)}/metric-trust`, { metric }),
  ]);
  ui.setZone(model.timezone);
  const ranked = [...out.curves].sort((a, b) => atRatio(out, a) - atRatio(out, b));
  const table = h("table", { id: "trust-table", class: "summary" },
    h("thead", {}, h("tr", {}, ["metric", `sensitivity at this model's 1:${Math.round(out.ratio)}`, "at 1:10,000"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ranked.map((c) => h("tr", { "data-metric": c.metric },
      h("th", { scope: "row" }, LABELS[c.metric] || c.metric),
      h("td", { class: "num", "data-field": "at_ratio" }, num(atRatio(out, c), 3)),
      h("td", { class: "num" }, num(c.sensitivity[out.ratios.findIndex((r) => r >= 1e4)], 3))))));
  const picker = h("select", {
    id: "surface-picker",
    onchange: (event) => { location.hash = trustLink(name, event.target.value); },
  }, out.curves.map((c) => h("option", { value: c.metric, selected: c.metric === metric }, LABELS[c.metric] || c.metric)));
  const [curveFig, curveBox] = figure("How much each metric moves with the imbalance", "chart-sensitivity",
    "s(r) is the volume between a metric's surface at 1:1 and at 1:r over contingency space (0: the imbalance does not move it; the seed paper's measure). It grows about logarithmically with r, then saturates. Solid lines are calibrated metrics (at pi0): flat at 0, the imbalance cannot move them. The dashed vertical line is this model's ratio.");
  const [surfaceFig, surfaceBox] = figure(`${LABELS[metric] || metric} over contingency space at 1:${Math.round(out.ratio)}`, "chart-surface",
    "each cell is the metric (rescaled to 0–1: white 0, dark blue 1) of every confusion matrix with that true negative rate (across) and true positive rate (up) at this model's ratio; grey cells are 0/0. The dots are this model's windows at its threshold: where they sit on the surface is what the metric can say about them. A metric whose surface is nearly flat where the windows are cannot tell them apart.");
  render(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", h("a", { href: modelLink(name) }, name), " / which metric to trust"),
    h("h1", {}, `${name}: which metric to trust`),
    h("p", { class: "lede" }, `This model runs at a fraud rate of ${pct(out.pi, 3)}: 1 fraud for ${Math.round(out.ratio)} legitimate rows. ` +
      `Metrics low in the table move least when the fraud rate does; calibrated ones at pi0 ${pct(out.pi0, 3)} not at all.`),
    table,
    curveFig,
    h("p", {}, h("label", { class: "picker" }, "Surface of ", picker)),
    surfaceFig,
    howTo("from the seed paper on class-imbalance sensitivity (contingency space, its Riemann sum at 100 × 100 cells). Its future work, the model's own operating points moving across a surface, is the second chart."));
  charts.sensitivityChart(curveBox, {
    ratios: out.ratios,
    curves: out.curves.map((c) => ({ ...c, metric: LABELS[c.metric] || c.metric, calibrated: c.metric.startsWith("calibrated") })),
    markers: [{ x: out.ratio, label: "this model" }],
  });
  charts.surfaceChart(surfaceBox, { centres: out.surface.centres, values: out.surface.values, points: out.windows });
}

ui.trustLink = trustLink;
ui.pages.trust = trustPage;
