// The three pages (models, model, window), the token prompt and the hash router.
"use strict";

(function () {
  const app = document.getElementById("app");
  const forget = document.getElementById("forget-token");
  const SEVERITY = { drop: 0, ok: 1, warming_up: 2 };
  const STATE_TEXT = { drop: "▼ drop", ok: "✓ ok", warming_up: "… warming up" };
  // One symbol per verdict so the strip reads without colour.
  const VERDICT_MARK = {
    stable: "=",
    prior_shift: "~",
    performance_drop: "▼",
    performance_gain: "▲",
    both: "◆",
    insufficient_data: "·",
    reference: "R",
    score_shift: "!",
  };
  const VERDICT_TEXT = {
    stable: "stable",
    prior_shift: "prior shift (fraud rate moved, model did not)",
    performance_drop: "performance drop",
    performance_gain: "performance gain",
    both: "drop and prior shift",
    insufficient_data: "not judged yet (labels immature or too few)",
    reference: "in the reference",
    score_shift: "scores moved (provisional, before labels)",
  };

  // ---- small helpers ------------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const num = (v, digits = 4) => (v == null ? "–" : v.toFixed(digits));
  const pct = (v, digits = 2) => (v == null ? "–" : (100 * v).toFixed(digits) + "%");
  const signed = (v, digits = 4) => (v == null ? "–" : (v > 0 ? "+" : "") + v.toFixed(digits));
  const interval = (ci, f = num) => (ci == null ? "–" : `[${f(ci[0])}, ${f(ci[1])}]`);
  const seconds = (iso) => Date.parse(iso) / 1000;
  // A window start as its day (or hour); an instant to the minute, in UTC.
  const day = (iso) => (iso == null ? "–" : iso.replace("T00:00:00Z", "").replace(/:00Z$/, " UTC").replace("T", " "));
  const when = (iso) => (iso == null ? "–" : iso.slice(0, 16).replace("T", " ") + " UTC");
  const enc = encodeURIComponent;

  // A measured value, its interval, and the reason when it is undefined.
  function valueCell(value, attrs, f = num) {
    return h("td", { class: "num", title: attrs.reason || undefined, ...attrs.data }, f(value));
  }

  function estimateTag() {
    return h("span", { class: "estimate-tag", title: "estimated from scores, not measured" }, "estimate");
  }

  function howTo(text) {
    return h("p", { class: "how" }, h("strong", {}, "How to read this: "), text);
  }

  function modelLink(name, segment) {
    return `#/models/${enc(name)}` + (segment && segment !== "all" ? `?segment=${enc(segment)}` : "");
  }

  function windowLink(name, start, segment) {
    return `#/models/${enc(name)}/windows/${enc(start)}` + `?segment=${enc(segment || "all")}`;
  }

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
    app.replaceChildren(
      h("h1", {}, "Models"),
      h("p", { class: "lede" }, `${models.length} models, ${rows.length} segments; worst first: paging segments, then the largest fall of calibrated AP below the reference.`),
      rows.length ? table : h("p", {}, "No model has windows yet."),
      howTo("a segment drops when the detector has accumulated enough evidence that its calibrated AP (AP at the fixed reference fraud rate pi0) is below its reference; a moved fraud rate pi alone never drops. Label coverage is the share of the newest window's rows with a label."),
    );
  }

  // ---- Model --------------------------------------------------------------------------------
  function piChanges(points) {
    const marks = [];
    for (let i = 1; i < points.length; i++) {
      const before = points[i - 1].pi0;
      const now = points[i].pi0;
      if (now != null && before != null && now !== before) {
        marks.push({ x: seconds(points[i].window_start), label: `pi0 ${pct(now, 3)}` });
      }
    }
    return marks;
  }

  function verdictStrip(name, segment, points) {
    const strip = h("div", { class: "strip", id: "verdict-strip", role: "list" },
      points.map((p) => h("a", {
        role: "listitem",
        class: `cell v-${p.verdict}` + (p.judged ? "" : " provisional"),
        href: windowLink(name, p.window_start, segment),
        "data-verdict": p.verdict,
        "data-window": p.window_start,
        title: `${day(p.window_start)}: ${VERDICT_TEXT[p.verdict]}${p.judged ? "" : " (provisional)"}`,
      }, VERDICT_MARK[p.verdict])));
    const legend = h("p", { class: "legend" }, Object.entries(VERDICT_MARK).map(([verdict, mark]) =>
      h("span", { class: "key" }, h("span", { class: `cell v-${verdict}` }, mark), " ", VERDICT_TEXT[verdict])));
    return [strip, legend];
  }

  function figure(title, id, how) {
    const box = h("div", { class: "chart", id });
    return [h("figure", {}, h("h2", {}, title), box, howTo(how)), box];
  }

  async function modelPage(name, params) {
    const segment = params.get("segment") || "all";
    const base = `/v1/models/${enc(name)}`;
    const [model, ap, f1, alerts, reference, pi0] = await Promise.all([
      calmon.get(base),
      calmon.get(`${base}/metrics`, { metric: "average_precision", segment }),
      calmon.get(`${base}/metrics`, { metric: "f1", segment }),
      calmon.get(`${base}/alerts`),
      calmon.get(`${base}/reference`),
      calmon.get(`${base}/pi0`),
    ]);
    const started = performance.now();
    const points = ap.points;
    const state = alerts.segments.find((s) => s.segment === segment);
    const ref = reference.segments.find((s) => s.segment === segment);
    const segments = [...new Set([...alerts.segments, ...reference.segments].map((s) => s.segment))].sort();
    const picker = h("select", {
      id: "segment-picker",
      onchange: (event) => { location.hash = modelLink(name, event.target.value); },
    }, segments.map((s) => h("option", { value: s, selected: s === segment }, s)));
    const newest = points[points.length - 1];
    const timezone = model.timezone;
    const x = points.map((p) => seconds(p.window_start));
    const pick = (i) => { location.hash = windowLink(name, points[i].window_start, segment); };
    const windowSeconds = { hour: 3600, day: 86400, week: 604800 }[model.granularity] || 86400;
    const spans = ref && ref.ready
      ? [{ from: seconds(ref.first_window), to: seconds(ref.last_window) + windowSeconds, label: `reference v${reference.current.version}` }]
      : [];
    const markers = piChanges(points);
    const pi0Used = pi0.history.filter((w) => w.used);
    const pi0Spans = pi0Used.length
      ? [{ from: seconds(pi0Used[0].window_start), to: seconds(pi0Used[pi0Used.length - 1].window_start) + windowSeconds, label: `the pi0 policy (${pi0.policy}) draws on these windows` }]
      : [];
    const col = (series, key) => series.points.map((p) => p[key]);
    const ciCol = (series, key, i) => series.points.map((p) => (p[key] ? p[key][i] : null));
    const nowcast = (series, key) => series.points.map((p) => (p.nowcast ? p.nowcast[key] : null));
    const refLine = points.map(() => (ref ? ref.calibrated_average_precision : null));

    const summary = newest ? h("table", { id: "newest-window", class: "summary" },
      h("tr", {}, ["newest window", "regular AP", "calibrated AP", "pi", "pi0", "label coverage", "verdict"].map((t) => h("th", {}, t))),
      h("tr", { "data-window": newest.window_start },
        h("td", {}, h("a", { href: windowLink(name, newest.window_start, segment) }, day(newest.window_start))),
        h("td", { class: "num", "data-field": "regular" }, num(newest.regular)),
        h("td", { class: "num", "data-field": "calibrated" }, num(newest.calibrated)),
        h("td", { class: "num", "data-field": "pi" }, pct(newest.pi, 3)),
        h("td", { class: "num", "data-field": "pi0" }, pct(newest.pi0, 3)),
        h("td", { class: "num", "data-field": "coverage" }, pct(newest.label_coverage, 1)),
        h("td", { "data-field": "verdict" }, `${VERDICT_MARK[newest.verdict]} ${newest.verdict}`)),
    ) : null;

    const [apFig, apBox] = figure("Average precision: measured and calibrated", "chart-ap",
      "the dashed line is AP as measured, which moves with the fraud rate; the solid line is AP calibrated to the reference fraud rate pi0, which moves only when the model ranks better or worse. Bands (hatched: measured, plain: calibrated) are 95% bootstrap intervals; the dotted line is the reference's calibrated AP; hollow circles are estimates from scores before the labels arrive (measured AP's expected value), not measurements. Click a point for its window.");
    const [f1Fig, f1Box] = figure("F1 at the threshold: measured and calibrated", "chart-f1",
      "as above for F1 at the model's threshold: measured (dashed, hatched band) and at pi0 (solid, plain band); hollow circles are expected F1 estimated from scores.");
    const [piFig, piBox] = figure("Fraud rate: measured pi, reference pi0, estimate from scores", "chart-pi",
      "the solid line is the share of fraud among a window's labelled rows, the dashed step is pi0, the prior every calibrated value is computed at; the shaded span is the windows the pi0 policy estimates it from, and a dashed vertical line marks where windows were computed at a different pi0. Hollow circles and their hatched band are the fraud rate estimated from scores alone, with its 95% interval: an estimate, available before labels.");
    const [effFig, effBox] = figure("Why AP moved: prior effect and performance effect", "chart-effects",
      "each window's AP change against the segment's reference, split in two: the prior effect (dashed) is what the fraud rate's move explains, the performance effect (solid) is the change of calibrated AP, the model's own. Only the performance effect can page.");
    const [covFig, covBox] = figure("Label coverage", "chart-coverage",
      `the share of a window's rows that have a label. A window is judged once it reaches the model's minimum (dotted line, ${pct(model.min_label_coverage, 0)}); until then its verdict is provisional.`);

    app.replaceChildren(
      h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", name),
      h("h1", {}, name, " ", h("label", { class: "picker" }, "segment ", picker)),
      h("p", { class: "lede", id: "alert-state", "data-state": state ? state.state : "none" },
        state ? `${STATE_TEXT[state.state]} — ${state.reason || `drop evidence ${num(state.drop_evidence, 2)}`}` +
          (state.episode_start ? `; drop since ${day(state.episode_start)}` : "") : "no alert state yet",
        ` · pi0 ${pct(ap.pi0, 3)} (version ${ap.pi0_version ?? "–"}) · reference version ${reference.current.version}` +
          (ref && ref.ready ? ` (${day(ref.first_window)} to ${day(ref.last_window)}, calibrated AP ${num(ref.calibrated_average_precision)})` : ` (${ref ? ref.reason : "not collected"})`)),
      summary,
      h("h2", {}, "Verdicts, one mark per window"),
      ...verdictStrip(name, segment, points),
      howTo("each mark is one window, oldest left. ▼ and ◆ are drops the detector issued; ~ is a fraud-rate move with the model unchanged; · is not judged yet; a faded mark is provisional."),
      apFig, f1Fig, piFig, effFig, covFig,
    );
    if (!points.length) return;

    const measuredBand = (series) => ({ lo: ciCol(series, "regular_ci", 0), hi: ciCol(series, "regular_ci", 1), color: "#b35806", hatch: true });
    const calibratedBand = (series) => ({ lo: ciCol(series, "calibrated_ci", 0), hi: ciCol(series, "calibrated_ci", 1), color: "rgba(31, 95, 168, 0.22)" });
    const common = { x, timezone, spans, markers, onPick: pick };
    charts.timeChart(apBox, {
      ...common, yLabel: "average precision (0–1)", yRange: [0, 1],
      lines: [
        { label: "measured", style: "regular", values: col(ap, "regular") },
        { label: "calibrated at pi0", style: "calibrated", values: col(ap, "calibrated") },
        { label: "reference (calibrated)", style: "reference", values: refLine },
        { label: "estimate from scores", estimate: true, values: nowcast(ap, "value") },
      ],
      bands: [measuredBand(ap), calibratedBand(ap)],
    });
    charts.timeChart(f1Box, {
      ...common, yLabel: "F1 (0–1)", yRange: [0, 1],
      lines: [
        { label: "measured", style: "regular", values: col(f1, "regular") },
        { label: "calibrated at pi0", style: "calibrated", values: col(f1, "calibrated") },
        { label: "estimate from scores", estimate: true, values: nowcast(f1, "value") },
      ],
      bands: [measuredBand(f1), calibratedBand(f1)],
    });
    const percent = (v) => (100 * v).toFixed(2) + "%";
    charts.timeChart(piBox, {
      ...common, spans: pi0Spans, yLabel: "fraud rate (%)", format: percent,
      lines: [
        { label: "pi (measured)", style: "calibrated", values: col(ap, "pi") },
        { label: "pi0", style: "regular", values: col(ap, "pi0"), stepped: true },
        { label: "pi estimated from scores", estimate: true, values: nowcast(ap, "pi") },
      ],
      bands: [{
        lo: points.map((p) => (p.nowcast && p.nowcast.pi_ci ? p.nowcast.pi_ci[0] : null)),
        hi: points.map((p) => (p.nowcast && p.nowcast.pi_ci ? p.nowcast.pi_ci[1] : null)),
        color: "#6a3d9a", hatch: true,
      }],
    });
    charts.timeChart(effBox, {
      ...common, yLabel: "AP change vs reference", format: (v) => signed(v, 3),
      lines: [
        { label: "prior effect", style: "regular", values: col(ap, "prior_effect") },
        { label: "performance effect", style: "calibrated", values: col(ap, "performance_effect") },
        { label: "zero", style: "reference", values: points.map(() => 0) },
      ],
    });
    charts.timeChart(covBox, {
      ...common, yLabel: "labelled rows (%)", yRange: [0, 1.05], format: (v) => (100 * v).toFixed(0) + "%",
      lines: [
        { label: "label coverage", style: "calibrated", values: col(ap, "label_coverage") },
        { label: "minimum to judge", style: "reference", values: points.map(() => model.min_label_coverage) },
      ],
    });
    document.body.dataset.chartMs = (performance.now() - started).toFixed(1);
  }

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
    app.replaceChildren(
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

  // ---- router -------------------------------------------------------------------------------
  async function route() {
    const started = performance.now();
    delete document.body.dataset.ready;
    forget.hidden = !calmon.token();
    const [path, query] = location.hash.replace(/^#/, "").split("?");
    const params = new URLSearchParams(query || "");
    const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
    if (calmon.authRequired && !calmon.token()) {
      showLogin(null);
      return;
    }
    try {
      if (parts[0] === "models" && parts.length === 2) await modelPage(parts[1], params);
      else if (parts[0] === "models" && parts[2] === "windows" && parts.length === 4) await windowPage(parts[1], parts[3], params);
      else await modelsPage();
      document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
      document.body.dataset.ready = location.hash || "#/";
    } catch (error) {
      if (error instanceof calmon.AuthError) {
        showLogin(authMessage(error));
        return;
      }
      app.replaceChildren(h("p", { class: "error", role: "alert" }, String(error.message || error)));
    }
  }

  forget.addEventListener("click", () => {
    calmon.forgetToken();
    route();
  });
  window.addEventListener("hashchange", route);
  route();
})();
