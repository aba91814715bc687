// One window in detail: counts, every metric, the estimates, the PR curves.

import { calmon } from "./api.js";
import { charts } from "./charts.js";
import { ui } from "./ui.js";

const { h, render, num, pct, signed, interval, day, when, enc, readable, valueCell, estimateTag, estimated, lookText, howTo, modelLink, windowLink, figure, VERDICT_MARK, VERDICT_TEXT } = ui;
const SOURCE_TEXT = { feedback: "investigators' feedback", chargeback: "chargebacks", confirmed: "confirmed (no source sent)" };

// ---- Early estimate ---------------------------------------------------------------------
function estimateRow(key, label, e, f = num) {
  return h("tr", { "data-estimate": key },
    h("th", { scope: "row" }, label),
    h("td", { class: "num", "data-field": "value" }, e.value == null ? "–" : f(e.value)),
    h("td", { class: "num ci", "data-field": "ci" }, interval(e.ci, f)),
    h("td", { class: "reason" }, e.reason || ""));
}

function feedbackText(fb) {
  if (!fb) return "No alert reviewed yet: investigators' feedback usually arrives the day after.";
  return `Alert precision from investigators' feedback: ${pct(fb.value, 1)} ${interval(fb.ci, (v) => pct(v, 1))} ` +
    `(${fb.confirmed} of the ${fb.reviewed} alerts reviewed so far were confirmed fraud). It covers the reviewed alerts only: ` +
    "it says nothing about the frauds the model missed, and enters no other value.";
}

function evidenceText(ev) {
  const direction = ev.z > 0 ? "lower" : "higher";
  return `Early evidence about a drop: the ${ev.frauds} frauds reported so far score ${direction} than the reference's frauds ` +
    `(z ${num(ev.z, 2)}, given how complete each score range's labels are by now). Log-likelihood ratio of a drop against none ${num(ev.llr, 2)}, ` +
    `divided by how bursty the frauds are (${num(ev.dispersion, 2)}): this window adds ${signed(ev.increment, 2)} to the drop evidence that pages.`;
}

function earlySection(e, granularity) {
  const labels = e.labels_so_far;
  const sources = Object.entries(labels.by_source).map(([s, n]) => `${n} from ${SOURCE_TEXT[s] || s}`).join(", ");
  const percent = (v) => pct(v, 3);
  return h("section", { id: "early", class: "estimate early" },
    h("h2", {}, "Estimated from labels so far ", estimateTag("labels")),
    h("p", {}, `Not measured: what this window's complete labels are expected to show, from the labels that arrived by ${when(e.as_of)} ` +
      `(${lookText(e.look, granularity)}), scaled up by how complete recent windows' labels were at the same age. ` +
      `Against reference version ${e.reference_version}; calibrated values at pi0 ${pct(e.pi0, 3)}.`),
    h("p", { id: "labels-so-far" }, `Labels so far: ${labels.frauds} frauds, ${labels.legitimate} alerts cleared as legitimate` +
      (sources ? ` (${sources}).` : ".")),
    e.reason ? h("p", { class: "reason" }, `No estimate yet: ${e.reason}`) : null,
    h("table", { id: "early-table" },
      h("thead", {}, h("tr", {}, ["expected once the labels are complete", "estimate", "95% interval", "why undefined"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {},
        estimateRow("frauds_total", "fraud labels in all", e.frauds_total, (v) => v.toFixed(0)),
        estimateRow("pi", "fraud rate pi", e.pi, percent),
        estimateRow("precision", "precision at the threshold", e.precision),
        estimateRow("recall", "recall at the threshold", e.recall),
        estimateRow("average_precision", "calibrated AP at pi0", e.average_precision))),
    h("p", { id: "alert-precision-feedback" }, feedbackText(e.alert_precision_feedback)),
    e.evidence ? h("p", { id: "early-evidence" }, evidenceText(e.evidence)) : null);
}

// ---- Window -------------------------------------------------------------------------------
async function windowPage(name, start, params) {
  const segment = params.get("segment") || "all";
  const [w, model] = await Promise.all([
    calmon.get(`/v1/models/${enc(name)}/windows/${enc(start)}`, { segment }),
    calmon.get(`/v1/models/${enc(name)}`),
  ]);
  ui.setZone(model.timezone);
  const picker = h("select", {
    id: "segment-picker",
    onchange: (event) => { location.hash = windowLink(name, start, event.target.value); },
  }, w.segments.map((s) => h("option", { value: s, selected: s === segment }, s)));
  const c = w.counts || {};
  const counts = h("table", { id: "confusion", class: "confusion" },
    h("tr", {}, h("th", {}, `at threshold ${w.threshold}`), h("th", {}, "fraud (label 1)"), h("th", {}, "legitimate (label 0)")),
    h("tr", {}, h("th", {}, "flagged (score ≥ threshold)"), h("td", { class: "num", "data-count": "tp" }, c.tp ?? "–"), h("td", { class: "num", "data-count": "fp" }, c.fp ?? "–")),
    h("tr", {}, h("th", {}, "not flagged"), h("td", { class: "num", "data-count": "fn" }, c.fn ?? "–"), h("td", { class: "num", "data-count": "tn" }, c.tn ?? "–")));
  const metrics = h("table", { id: "metrics-table" },
    h("thead", {}, h("tr", {}, ["metric", "measured", "95% interval", "calibrated at pi0", "95% interval", "prior effect", "performance effect", "why undefined"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, Object.entries(w.metrics).map(([metric, m]) => h("tr", { "data-metric": metric },
      h("th", { scope: "row" }, metric),
      valueCell(m.regular, { reason: m.reason, data: { "data-variant": "regular" } }),
      h("td", { class: "num ci", "data-variant": "regular_ci" }, interval(m.regular_ci)),
      valueCell(m.calibrated, { reason: m.reason, data: { "data-variant": "calibrated" } }),
      h("td", { class: "num ci", "data-variant": "calibrated_ci" }, interval(m.calibrated_ci)),
      h("td", { class: "num" }, signed(m.prior_effect)),
      h("td", { class: "num" }, signed(m.performance_effect)),
      h("td", { class: "reason" }, m.reason || "")))));
  const n = w.nowcast;
  const nowcastBlock = n ? h("section", { id: "nowcast", class: "estimate" },
    h("h2", {}, "Estimated from scores ", estimateTag("scores")),
    h("p", {}, `Not measured: fitted to the window's ${n.rows ?? "–"} scores against reference version ${n.reference_version}, assuming only the fraud rate moved. ` +
      `Fraud rate ${estimated({ value: n.pi, ci: n.pi_ci }, (v) => pct(v, 3))}; ` +
      Object.entries(n.expected).map(([k, v]) => `expected ${k} ${estimated(v)}`).join("; ") +
      (n.score_shift ? ". The scores fit no fraud rate: the model or its inputs changed." : ".") +
      (n.reason ? ` ${n.reason}` : ""))) : null;
  const e = w.evidence;
  const evidence = e ? h("p", { id: "evidence" },
    `Detector: calibrated AP ${num(e.observed)} against ${num(e.expected)} expected for a window this size (reference ${num(e.reference)}); ` +
    `z ${num(e.z, 2)}; drop statistic ${num(e.drop_statistic, 2)} of ${num(e.threshold, 2)} to page.`) : null;
  // An immature window's measured values are withheld (they would rest on the labels that came
  // first): one sentence says so instead of a table of dashes, and its estimates come first.
  const measured = w.mature ? [
    h("h2", {}, "Confusion counts"),
    counts,
    h("h2", {}, "Every metric, measured and calibrated"),
    metrics,
    howTo("measured values are computed on the window's labelled rows; calibrated values on the same rows with precision-type metrics recomputed at pi0. Intervals are 95% bootstrap intervals. Effects compare with the segment's reference. A dash is undefined; hover it for the reason."),
  ] : [];
  const withheld = w.mature ? null : h("p", { id: "withheld", class: "how" }, h("strong", {}, "No measured values yet: "),
    "the first labels to arrive are mostly frauds (chargebacks, confirmed alerts), so counts, metrics and curves measured on them would mislead. " +
    "They are shown once the window's labels are complete; until then, the estimates below.");
  const [prFig, prBox] = figure("Precision-recall curves: as measured and at pi0", "chart-pr",
    "the dashed curve is precision against recall on this window as measured (its fraud rate pi); the solid curve is the same ranking with precision recomputed at the reference fraud rate pi0, so windows with different fraud rates compare. The gap between them is the prior effect.");
  const [rocFig, rocBox] = figure("ROC curve", "chart-roc",
    "the share of frauds caught against the share of legitimate rows flagged, at every threshold. It does not depend on the fraud rate, so it has no calibrated twin; its area is roc_auc.");
  const [gainFig, gainBox] = figure("PR-Gain curves: as measured and at pi0", "chart-pr-gain",
    "precision and recall as gains over flagging every row (Flach & Kull 2015), from recall gain 0; the solid curve takes the recall gain at pi0. The area under each is pr_gain_auc; below 0, a threshold does worse than flagging everything.");
  const maturity = w.mature
    ? h("p", { id: "maturity", "data-mature": "true" }, "Labels complete: measured values below.")
    : h("p", { id: "maturity", class: "waiting", "data-mature": "false" }, h("strong", {}, "Waiting for labels: "),
      readable(w.verdict_reason || "its labels are not complete yet").replace(/^waiting for labels:\s*/, ""));
  render(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", h("a", { href: modelLink(name, segment) }, name), " / ", day(w.window_start)),
    h("h1", { title: `starts ${ui.utc(w.window_start)}` }, `${name}: window ${day(w.window_start)} `, h("label", { class: "picker" }, "segment ", picker)),
    h("p", { class: "lede", id: "verdict", "data-verdict": w.verdict },
      `${VERDICT_MARK[w.verdict]} ${VERDICT_TEXT[w.verdict]}` + (w.judged_at ? ` (issued ${when(w.judged_at)})` : " (provisional)") +
      (w.verdict_reason && w.mature ? ` — ${readable(w.verdict_reason)}` : "")),
    maturity,
    h("table", { id: "window-facts", class: "summary" },
      h("tr", {}, ["rows", w.mature ? "labelled" : "labelled so far", w.mature ? "frauds" : "frauds so far", "pi", "pi0", "label coverage", "computed"].map((t) => h("th", {}, t))),
      h("tr", {},
        h("td", { class: "num", "data-field": "rows_total" }, w.rows_total),
        h("td", { class: "num", "data-field": "n" }, w.n),
        h("td", { class: "num", "data-field": "positives" }, w.positives),
        h("td", { class: "num", "data-field": "pi", title: w.mature ? undefined : "withheld until the labels are complete" }, pct(w.pi, 3)),
        h("td", { class: "num", "data-field": "pi0" }, `${pct(w.pi0, 3)} (v${w.pi0_version ?? "–"})`),
        h("td", { class: "num", "data-field": "coverage" }, pct(w.label_coverage, 1)),
        h("td", {}, `${when(w.computed_at)} in ${w.duration_seconds.toFixed(2)} s`))),
    evidence,
    withheld,
    w.early && !w.mature ? earlySection(w.early, model.granularity) : null,
    ...measured,
    nowcastBlock,
    w.mature ? prFig : null,
    w.mature && w.roc ? rocFig : null,
    w.mature && w.pr_gain.regular ? gainFig : null,
  );
  const curves = [];
  if (w.curves.regular) curves.push({ label: `as measured (pi ${pct(w.pi, 3)})`, style: "regular", ...w.curves.regular });
  if (w.curves.calibrated) curves.push({ label: `at pi0 ${pct(w.pi0, 3)}`, style: "calibrated", ...w.curves.calibrated });
  if (curves.length && w.mature) charts.prChart(prBox, { curves });
  if (w.mature && w.roc && w.roc.fpr.length) charts.rocChart(rocBox, { curves: [{ label: "ROC", style: "calibrated", ...w.roc }] });
  const gains = [];
  if (w.pr_gain.regular && w.pr_gain.regular.recall_gain.length) gains.push({ label: `as measured (pi ${pct(w.pi, 3)})`, style: "regular", ...w.pr_gain.regular });
  if (w.pr_gain.calibrated && w.pr_gain.calibrated.recall_gain.length) gains.push({ label: `at pi0 ${pct(w.pi0, 3)}`, style: "calibrated", ...w.pr_gain.calibrated });
  if (gains.length && w.mature) charts.gainChart(gainBox, { curves: gains });
}

ui.pages.window = windowPage;
