// One window in detail: counts, every metric, the estimate, the PR curves.
"use strict";

(function () {
  const { h, render, num, pct, signed, interval, seconds, day, when, enc, valueCell, estimateTag, howTo, modelLink, windowLink, figure, SEVERITY, STATE_TEXT, VERDICT_MARK, VERDICT_TEXT } = ui;

  // ---- Window -------------------------------------------------------------------------------
  async function windowPage(name, start, params) {
    const segment = params.get("segment") || "all";
    const w = await calmon.get(`/v1/models/${enc(name)}/windows/${enc(start)}`, { segment });
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
      h("h2", {}, "Estimated from scores ", estimateTag()),
      h("p", {}, `Not measured: fitted to the window's ${n.rows ?? "–"} scores against reference version ${n.reference_version}, assuming only the fraud rate moved. ` +
        `Fraud rate ${pct(n.pi, 3)} ${interval(n.pi_ci, (v) => pct(v, 3))}; ` +
        Object.entries(n.expected).map(([k, v]) => `expected ${k} ${num(v.value)} ${interval(v.ci)}`).join("; ") +
        (n.score_shift ? ". The scores fit no fraud rate: the model or its inputs changed." : ".") +
        (n.reason ? ` ${n.reason}` : ""))) : null;
    const e = w.evidence;
    const evidence = e ? h("p", { id: "evidence" },
      `Detector: calibrated AP ${num(e.observed)} against ${num(e.expected)} expected for a window this size (reference ${num(e.reference)}); ` +
      `z ${num(e.z, 2)}; drop statistic ${num(e.drop_statistic, 2)} of ${num(e.threshold, 2)} to page.`) : null;
    const [prFig, prBox] = figure("Precision-recall curves: as measured and at pi0", "chart-pr",
      "the dashed curve is precision against recall on this window as measured (its fraud rate pi); the solid curve is the same ranking with precision recomputed at the reference fraud rate pi0, so windows with different fraud rates compare. The gap between them is the prior effect.");
    render(
      h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", h("a", { href: modelLink(name, segment) }, name), " / ", day(w.window_start)),
      h("h1", {}, `${name}: window ${day(w.window_start)} `, h("label", { class: "picker" }, "segment ", picker)),
      h("p", { class: "lede", id: "verdict", "data-verdict": w.verdict },
        `${VERDICT_MARK[w.verdict]} ${VERDICT_TEXT[w.verdict]}` + (w.judged_at ? ` (issued ${when(w.judged_at)})` : " (provisional)") +
        (w.verdict_reason ? ` — ${w.verdict_reason}` : "")),
      h("table", { id: "window-facts", class: "summary" },
        h("tr", {}, ["rows", "labelled", "frauds", "pi", "pi0", "label coverage", "computed"].map((t) => h("th", {}, t))),
        h("tr", {},
          h("td", { class: "num", "data-field": "rows_total" }, w.rows_total),
          h("td", { class: "num", "data-field": "n" }, w.n),
          h("td", { class: "num", "data-field": "positives" }, w.positives),
          h("td", { class: "num", "data-field": "pi" }, pct(w.pi, 3)),
          h("td", { class: "num", "data-field": "pi0" }, `${pct(w.pi0, 3)} (v${w.pi0_version ?? "–"})`),
          h("td", { class: "num", "data-field": "coverage" }, pct(w.label_coverage, 1)),
          h("td", {}, `${when(w.computed_at)} in ${w.duration_seconds.toFixed(2)} s`))),
      evidence,
      h("h2", {}, "Confusion counts"),
      counts,
      h("h2", {}, "Every metric, measured and calibrated"),
      metrics,
      howTo("measured values are computed on the window's labelled rows; calibrated values on the same rows with precision-type metrics recomputed at pi0. Intervals are 95% bootstrap intervals. Effects compare with the segment's reference. A dash is undefined; hover it for the reason."),
      nowcastBlock,
      prFig,
    );
    const curves = [];
    if (w.curves.regular) curves.push({ label: `as measured (pi ${pct(w.pi, 3)})`, style: "regular", ...w.curves.regular });
    if (w.curves.calibrated) curves.push({ label: `at pi0 ${pct(w.pi0, 3)}`, style: "calibrated", ...w.curves.calibrated });
    if (curves.length) charts.prChart(prBox, { curves });
  }

  ui.pages.window = windowPage;
})();
