// The metric catalogue under a model's charts: which metrics the fraud rate moves, and by how much.

import { ui } from "./ui.js";

const { h, num, pct, howTo } = ui;

function sensitivityCell(value, reason, variant) {
  return h("td", { class: "num", "data-variant": variant, title: reason || undefined }, num(value, 3));
}

function catalogueSection(catalogue) {
  const rows = catalogue.metrics.map((m) => h("tr", { "data-metric": m.name },
    h("th", { scope: "row" }, m.label, m.in_registry ? "" : " (reference)"),
    h("td", { "data-field": "invariant" }, m.prior_invariant ? "yes: prior-invariant" : "no: moves with pi"),
    sensitivityCell(m.sensitivity.regular, m.sensitivity.reason, "regular"),
    sensitivityCell(m.sensitivity.calibrated, m.sensitivity.reason, "calibrated"),
    h("td", { class: "num", "data-field": "swing" },
      m.swing && m.swing.at_pi_lo != null ? `${num(m.swing.at_pi_lo, 3)} to ${num(m.swing.at_pi_hi, 3)}` : "–")));
  const ratio = `1:${Math.round(catalogue.ratio)}`;
  return h("section", { id: "catalogue" },
    h("h2", {}, `Which metric to trust at this model's class ratio (${ratio})`),
    h("table", { id: "catalogue-table", class: "summary" },
      h("thead", {}, h("tr", {}, ["metric", "depends on the fraud rate?", `sensitivity ${ratio} (measured)`, "sensitivity (calibrated)",
        `on this model's curve at pi ${pct(catalogue.range[0], 3)} and ${pct(catalogue.range[1], 3)}`].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows)),
    howTo("sensitivity is the seed paper's class-imbalance sensitivity: how far a metric moves between a balanced population and this model's 1:r with the same detection rates (0: not at all; a dash for curve metrics, where it is not defined: hover for why). The last column is the metric on this model's pooled curve at the lowest and highest fraud rate its windows saw: the model unchanged, only pi moved."),
    h("p", { id: "why-calibrated-ap" }, h("strong", {}, "Why calmon alerts on calibrated AP: "),
      "precision, F1 and measured AP move when only the fraud rate moves (the rows above), so an alert on them would page for a fraud wave the model handled well. Calibrated to the fixed reference rate pi0, they move only when the model ranks fraud better or worse, and AP judges the whole ranking rather than one threshold."));
}

ui.catalogueSection = catalogueSection;
