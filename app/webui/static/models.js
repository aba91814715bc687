// The models overview: every model and segment, worst first.
"use strict";

(function () {
  const { h, render, num, pct, signed, interval, seconds, day, when, enc, valueCell, estimateTag, howTo, modelLink, windowLink, figure, SEVERITY, STATE_TEXT, VERDICT_MARK, VERDICT_TEXT } = ui;

  // ---- Models -------------------------------------------------------------------------------
  async function overviewRow(model, segment, status) {
    const from = segment.newest_judged_window || status.latest_complete_window;
    const series = await calmon.get(`/v1/models/${enc(model.name)}/metrics`, {
      metric: "average_precision", segment: segment.segment, from,
    });
    const judged = series.points.find((p) => p.window_start === segment.newest_judged_window) || null;
    const newest = series.points[series.points.length - 1] || null;
    const observed = judged ? judged.calibrated : null;
    const reference = segment.reference_average_precision;
    const deficit = observed != null && reference != null ? observed - reference : null;
    return { model, segment, status, judged, newest, observed, reference, deficit };
  }

  // A registered model with no window yet still gets its line.
  function emptyRow(model, status) {
    const segment = {
      segment: "all", state: "warming_up", reason: "no windows yet", newest_judged_window: null,
      reference_average_precision: null, awaiting_labels: { windows: 0, rows: 0 },
    };
    return { model, segment, status, judged: null, newest: null, observed: null, reference: null, deficit: null };
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
    const rows = perModel.flat();
    rows.sort(
      (a, b) =>
        SEVERITY[a.segment.state] - SEVERITY[b.segment.state] ||
        (a.deficit ?? Infinity) - (b.deficit ?? Infinity) ||
        a.model.name.localeCompare(b.model.name) ||
        a.segment.segment.localeCompare(b.segment.segment),
    );
    const table = h(
      "table",
      { id: "models-table" },
      h("thead", {}, h("tr", {},
        ["model", "segment", "alert state", "calibrated AP (newest judged window)", "reference AP",
          "difference", "pi (newest window)", "pi0", "label coverage", "awaiting labels",
          "newest window", "computed at"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((row) => {
        const s = row.segment;
        const key = { "data-model": row.model.name, "data-segment": s.segment };
        return h("tr", { class: `state-${s.state}`, ...key },
          h("td", {}, h("a", { href: modelLink(row.model.name, s.segment) }, row.model.name)),
          h("td", {}, s.segment),
          h("td", { class: "state", "data-state": s.state, title: s.reason || undefined }, STATE_TEXT[s.state]),
          h("td", { class: "num", "data-field": "calibrated" },
            num(row.observed), row.judged ? h("span", { class: "ci" }, " ", interval(row.judged.calibrated_ci)) : null),
          h("td", { class: "num", "data-field": "reference" }, num(row.reference)),
          h("td", { class: "num", "data-field": "deficit" }, signed(row.deficit)),
          h("td", { class: "num", "data-field": "pi" }, pct(row.newest && row.newest.pi, 3)),
          h("td", { class: "num", "data-field": "pi0" }, pct(row.newest && row.newest.pi0, 3)),
          h("td", { class: "num", "data-field": "coverage" }, pct(row.newest && row.newest.label_coverage, 1)),
          h("td", { class: "num" }, `${s.awaiting_labels.windows} windows, ${s.awaiting_labels.rows} rows`),
          h("td", {}, day(row.newest && row.newest.window_start)),
          h("td", {}, when(row.status.latest_computed_at)));
      })),
    );
    render(
      h("h1", {}, "Models"),
      h("p", { class: "lede" }, `${models.length} models, ${rows.length} segments; worst first: paging segments, then the largest fall of calibrated AP below the reference.`),
      rows.length ? table : h("p", {}, "No model has windows yet."),
      howTo("a segment drops when the detector has accumulated enough evidence that its calibrated AP (AP at the fixed reference fraud rate pi0) is below its reference; a moved fraud rate pi alone never drops. Label coverage is the share of the newest window's rows with a label."),
    );
  }

  ui.pages.models = modelsPage;
})();
