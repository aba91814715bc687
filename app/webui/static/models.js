// The models overview: every model and segment, worst first.
"use strict";

(function () {
  const { h, render, num, pct, signed, interval, day, when, enc, estimated, onEarlyEvidence, howTo, modelLink, SEVERITY, STATE_TEXT } = ui;

  // ---- Models -------------------------------------------------------------------------------
  async function overviewRow(model, segment, status) {
    const from = segment.newest_judged_window || status.latest_complete_window;
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
    return { model, segment, status, judged, newest, mature, estimate, observed, reference, deficit };
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
          "difference", "estimate from labels so far", "pi (newest mature window)", "pi0",
          "label coverage", "awaiting labels", "newest window", "computed at"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((row) => {
        const s = row.segment;
        const key = { "data-model": row.model.name, "data-segment": s.segment };
        return h("tr", { class: `state-${s.state}`, ...key },
          h("td", {}, h("a", { href: modelLink(row.model.name, s.segment) }, row.model.name)),
          h("td", {}, s.segment),
          stateCell(s),
          h("td", { class: "num", "data-field": "calibrated" },
            num(row.observed), row.judged ? h("span", { class: "ci" }, " ", interval(row.judged.calibrated_ci)) : null),
          h("td", { class: "num", "data-field": "reference" }, num(row.reference)),
          h("td", { class: "num", "data-field": "deficit" }, signed(row.deficit)),
          earlyCell(row),
          h("td", { class: "num", "data-field": "pi" }, pct(row.mature && row.mature.pi, 3)),
          h("td", { class: "num", "data-field": "pi0" }, pct(row.newest && row.newest.pi0, 3)),
          h("td", { class: "num", "data-field": "coverage" }, pct(row.newest && row.newest.label_coverage, 1)),
          h("td", { class: "num", "data-field": "awaiting" }, `${s.awaiting_labels.windows} windows, ${s.awaiting_labels.rows} rows`),
          newestCell(row.newest, row.model.timezone),
          h("td", {}, when(row.status.latest_computed_at)));
      })),
    );
    render(
      h("h1", {}, "Models"),
      h("p", { class: "lede" }, `${models.length} models, ${rows.length} segments; worst first: paging segments, then the largest fall of calibrated AP below the reference.`),
      rows.length ? table : h("p", {}, "No model has windows yet."),
      howTo("a segment drops when the detector has accumulated enough evidence that its calibrated AP (AP at the fixed reference fraud rate pi0) is below its reference; a moved fraud rate pi alone never drops. A drop \"on early evidence\" rests on windows whose labels are still arriving: the frauds reported so far already score lower than the reference's. Their values are estimates of what the complete labels will show (from the labels so far, with 95% intervals), never measurements. Label coverage is the share of the newest window's rows with a label."),
    );
  }

  ui.pages.models = modelsPage;
})();
