// One model over time: verdict strip and charts, for one segment.

import { calmon } from "./api.js";
import { charts } from "./charts.js";
import { ui } from "./ui.js";

const { app, h, render, num, pct, signed, interval, seconds, day, when, enc, readable, estimateTag, estimated, lookText, onEarlyEvidence, earlyAlertText, howTo, modelLink, windowLink, figure, STATE_TEXT, VERDICT_MARK, VERDICT_TEXT } = ui;

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

// What a window still waiting for labels shows instead of measured values: its early estimate.
function waitingText(p) {
  const e = p.early;
  if (!e || e.value == null) return "waiting for labels" + (e && e.reason ? ` (no estimate yet: ${e.reason})` : "");
  return `waiting for labels; estimated from labels so far: calibrated AP ${estimated(e)}, fraud rate ${estimated({ value: e.pi, ci: e.pi_ci }, (v) => pct(v, 3))}`;
}

function verdictStrip(name, segment, points) {
  const strip = h("div", { class: "strip", id: "verdict-strip", role: "list" },
    points.map((p) => h("a", {
      role: "listitem",
      class: `cell v-${p.verdict}` + (p.judged ? "" : " provisional") + (p.mature ? "" : " waiting"),
      href: windowLink(name, p.window_start, segment),
      "data-verdict": p.verdict,
      "data-window": p.window_start,
      "data-mature": String(p.mature),
      title: `${day(p.window_start)}: ${VERDICT_TEXT[p.verdict]}${p.judged ? "" : " (provisional)"}` + (p.mature ? "" : `; ${waitingText(p)}`),
    }, VERDICT_MARK[p.verdict])));
  const legend = h("p", { class: "legend" }, Object.entries(VERDICT_MARK).map(([verdict, mark]) =>
    h("span", { class: "key" }, h("span", { class: `cell v-${verdict}` }, mark), " ", VERDICT_TEXT[verdict])),
    h("span", { class: "key" }, h("span", { class: "cell waiting" }, "·"), " still waiting for labels (underlined)"));
  return [strip, legend];
}

// The alert state in words: what pages, and why, with early evidence said as such.
function alertState(state, ap, reference, ref) {
  const prior = ` · pi0 ${pct(ap.pi0, 3)} (version ${ap.pi0_version ?? "–"}) · reference version ${reference.current.version}` +
    (ref && ref.ready ? ` (${day(ref.first_window)} to ${day(ref.last_window)}, calibrated AP ${num(ref.calibrated_average_precision)})` : ` (${ref ? ref.reason || "not frozen yet" : "not collected"})`);
  if (!state) return [h("p", { class: "lede", id: "alert-state", "data-state": "none" }, "no alert state yet", prior)];
  const early = onEarlyEvidence(state);
  const what = early
    ? `${STATE_TEXT[state.state]} on early evidence (labels still arriving)`
    : `${STATE_TEXT[state.state]} — ${readable(state.reason) || `drop evidence ${num(state.drop_evidence, 2)}`}`;
  const lede = h("p", { class: "lede", id: "alert-state", "data-state": state.state, "data-signals": state.signals.join(","), title: state.reason || undefined },
    what + (state.episode_start ? `; drop since ${day(state.episode_start)}` : ""), prior);
  return [lede, early ? h("p", { class: "early-alert", id: "early-alert", role: "note" }, estimateTag("labels"), " ", earlyAlertText(state)) : null];
}

// The newest window, and the newest one estimated from its labels so far when that is another.
function newestSummary(name, segment, points, granularity) {
  const newest = points[points.length - 1];
  if (!newest) return null;
  const withheld = (v, f) => (newest.mature ? f(v) : "–");
  const rows = [h("tr", { "data-window": newest.window_start, "data-mature": String(newest.mature) },
    h("td", {}, h("a", { href: windowLink(name, newest.window_start, segment) }, day(newest.window_start)),
      newest.mature ? "" : " (waiting for labels)"),
    h("td", { class: "num", "data-field": "regular", title: newest.reason || undefined }, withheld(newest.regular, num)),
    h("td", { class: "num", "data-field": "calibrated", title: newest.reason || undefined }, withheld(newest.calibrated, num)),
    h("td", { class: "num", "data-field": "pi" }, pct(newest.pi, 3)),
    h("td", { class: "num", "data-field": "pi0" }, pct(newest.pi0, 3)),
    h("td", { class: "num", "data-field": "coverage" }, pct(newest.label_coverage, 1)),
    h("td", { "data-field": "verdict" }, `${VERDICT_MARK[newest.verdict]} ${newest.verdict}`))];
  const estimate = [...points].reverse().find((p) => !p.mature && p.early);
  if (estimate) {
    const e = estimate.early;
    rows.push(h("tr", { class: "estimate-row", id: "newest-early", "data-window": estimate.window_start },
      h("td", {}, h("a", { href: windowLink(name, estimate.window_start, segment) }, day(estimate.window_start)), " ",
        estimateTag("labels"), h("span", { class: "ci" }, ` ${lookText(e.look, granularity)}, as of ${when(e.as_of)}`)),
      h("td", { class: "num" }, "–"),
      h("td", { class: "num", "data-field": "early-calibrated", title: e.reason || undefined }, estimated(e)),
      h("td", { class: "num", "data-field": "early-pi" }, estimated({ value: e.pi, ci: e.pi_ci }, (v) => pct(v, 3))),
      h("td", { class: "num" }, pct(estimate.pi0, 3)),
      h("td", { class: "num" }, pct(estimate.label_coverage, 1)),
      h("td", {}, "estimate: not judged")));
  }
  return h("table", { id: "newest-window", class: "summary" },
    h("tr", {}, ["newest window", "regular AP", "calibrated AP", "pi", "pi0", "label coverage", "verdict"].map((t) => h("th", {}, t))),
    rows);
}

// Which threshold to set now (GET .../threshold-advice), drawn when it arrives, like the
// catalogue: at the fraud rate now, what the threshold now, the one within the alert budget
// and the one restoring the reference's precision are expected to show.
function adviceSection(advice) {
  const head = h("h2", {}, "Which threshold to set now");
  if (advice.reason) return h("section", { id: "threshold-advice", "data-state": "none" }, head, h("p", { class: "how" }, `No advice yet: ${advice.reason}.`));
  const rate = advice.fraud_rate;
  // Money caught only where the reference's rows carry amounts.
  const money = advice.current.value_recall != null;
  const rows = [
    ["threshold now", "current", advice.current, null],
    [`within the alert budget (${advice.alert_capacity ?? "none"} a window)`, "within_capacity", advice.within_capacity, advice.within_capacity_reason],
    [`restoring the reference's precision (${num(advice.reference.precision)})`, "restoring_precision", advice.restoring_precision, advice.restoring_precision_reason],
  ].map(([label, key, e, reason]) => h("tr", { "data-advice": key },
    h("th", { scope: "row" }, label),
    ...(e
      ? [h("td", { class: "num", "data-field": "threshold" }, num(e.threshold)),
        h("td", { class: "num", "data-field": "precision" }, `${num(e.precision)} ${interval(e.precision_ci)}`),
        h("td", { class: "num", "data-field": "recall" }, `${num(e.recall)} ${interval(e.recall_ci)}`),
        h("td", { class: "num", "data-field": "alerts" }, `${Math.round(e.alerts)} ${interval(e.alerts_interval, (v) => String(Math.round(v)))}`),
        ...(money ? [h("td", { class: "num", "data-field": "value_recall" }, `${num(e.value_recall)} ${interval(e.value_recall_ci)}`)] : [])]
      : [h("td", { colspan: money ? 5 : 4, "data-field": "reason" }, `none: ${reason}`)])));
  return h("section", { id: "threshold-advice", "data-state": "advised" }, head,
    h("p", { class: "lede", id: "fraud-rate-now", "data-source": rate.source },
      `At the fraud rate now, ${pct(rate.value, 3)} ${interval(rate.ci, (v) => pct(v, 3))} (${{ measured: "measured on", early: "estimated from the labels so far of", nowcast: "estimated from the scores of" }[rate.source]} the window of ${day(rate.window_start)}), a window of ${Math.round(advice.rows_per_window)} rows is expected to show:`),
    h("table", { id: "advice-table", class: "summary" },
      h("thead", {}, h("tr", {}, ["", "threshold", "precision", "recall", "alerts (one window's 95% range)", ...(money ? ["fraud amount caught"] : [])].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows)),
    howTo(`read from the reference's curve (version ${advice.reference.version}, ${day(advice.reference.first_window)} to ${day(advice.reference.last_window)}): the model's rates at every score do not move with the fraud rate, only the mix does. The budget's threshold keeps a window's alerts within the capacity in 97.5% of windows, frauds coming in bursts included; precision and recall have 95% intervals. calmon does not change the threshold: PATCH the model's threshold to follow the advice.`));
}

function showAdvice(pending) {
  const slot = h("section", { id: "advice-pending" }, h("p", { class: "how" }, "Loading the threshold advice…"));
  app.append(slot);
  pending.then(
    (advice) => slot.replaceWith(adviceSection(advice)),
    (error) => slot.replaceChildren(h("p", { class: "error", role: "alert" }, `threshold advice: ${error.message || error}`)),
  );
}

// The catalogue is drawn when it arrives, without holding the page back (it is not needed to
// read the charts); a placeholder keeps its place, and a page left meanwhile is not touched.
function showCatalogue(pending) {
  const slot = h("section", { id: "catalogue-pending" }, h("p", { class: "how" }, "Loading the metric catalogue…"));
  app.append(slot);
  pending.then(
    (catalogue) => slot.replaceWith(ui.catalogueSection(catalogue)),
    (error) => slot.replaceChildren(h("p", { class: "error", role: "alert" }, `metric catalogue: ${error.message || error}`)),
  );
}

// Windows the worker gave up on (their computation failed three times for a reason that
// retrying cannot change): said at the top, with the error, until their data changes.
function parkedWindows(status) {
  if (!status.parked_windows) return [];
  const newest = status.parked[0];
  return [h("p", { class: "error", role: "alert", id: "parked-windows" },
    `${status.parked_windows} window${status.parked_windows === 1 ? "" : "s"} could not be computed and ${status.parked_windows === 1 ? "is" : "are"} parked until ${status.parked_windows === 1 ? "its" : "their"} rows, labels or the model's settings change. The newest, ${day(newest.window_start)}, failed ${newest.attempts} times: ${newest.error}`)];
}

// The team's alert budget (alert_capacity) on the newest judged window: the alerts it got
// against what the team can check, and the fraud share of the top k it could check.
function budgetSummary(model, precisionAtK, alerts, best, cards) {
  if (model.alert_capacity == null || !precisionAtK) return null;
  const newest = [...precisionAtK.points].reverse().find((p) => p.mature);
  const at = (series) => newest && series.points.find((p) => p.window_start === newest.window_start);
  const flagged = at(alerts);
  const reachable = at(best);
  // Card precision only where the rows name their card or account.
  const perCard = at(cards);
  const withCards = perCard && perCard.regular != null;
  if (!newest) return h("p", { class: "how", id: "alert-budget" }, `alert budget ${model.alert_capacity} a window: no judged window yet`);
  const count = flagged ? flagged.regular : null;
  return h("table", { id: "alert-budget", class: "summary", "data-window": newest.window_start },
    h("tr", {}, ["newest judged window", "alerts at the threshold", "precision at k (measured)", "precision at k (at pi0)", "best reachable", ...(withCards ? ["card precision at k (measured)", "card precision at k (at pi0)"] : [])].map((t) => h("th", {}, t))),
    h("tr", {},
      h("td", {}, day(newest.window_start)),
      h("td", { class: "num", "data-field": "alerts" }, count == null ? "–" : `${count} of ${model.alert_capacity} (${pct(count / model.alert_capacity, 0)})`),
      h("td", { class: "num", "data-field": "precision_at_k", title: newest.reason || undefined }, `${num(newest.regular)} ${interval(newest.regular_ci)}`),
      h("td", { class: "num", "data-field": "calibrated_precision_at_k", title: newest.reason || undefined }, `${num(newest.calibrated)} ${interval(newest.calibrated_ci)}`),
      h("td", { class: "num", "data-field": "precision_at_k_max" }, reachable ? num(reachable.regular) : "–"),
      ...(withCards ? [
        h("td", { class: "num", "data-field": "entity_precision_at_k" }, `${num(perCard.regular)} ${interval(perCard.regular_ci)}`),
        h("td", { class: "num", "data-field": "calibrated_entity_precision_at_k" }, `${num(perCard.calibrated)} ${interval(perCard.calibrated_ci)}`)] : [])));
}

// Money on the newest judged window (rows sent with an amount): the share of the fraud
// amount caught, the fraud share of the flagged amount, and net savings after review_cost.
function moneySummary(recall, precision, savings) {
  const newest = [...recall.points].reverse().find((p) => p.mature && p.regular != null);
  if (!newest) return null;
  const at = (series) => series.points.find((p) => p.window_start === newest.window_start) || {};
  const valuePrecision = at(precision);
  const net = at(savings);
  const money = (v) => (v == null ? "–" : v.toFixed(2));
  const cell = (field, point, f) => h("td", { class: "num", "data-field": field, title: point.reason || undefined },
    point.regular == null && point.reason ? "–" : `${f(point.regular)} ${interval(point.regular_ci, f)}`);
  const calibrated = (field, point, f) => h("td", { class: "num", "data-field": field, title: point.reason || undefined },
    `${f(point.calibrated)} ${interval(point.calibrated_ci, f)}`);
  return h("table", { id: "money-caught", class: "summary", "data-window": newest.window_start },
    h("tr", {}, ["newest judged window", "fraud amount caught", "fraud share of the flagged amount", "net savings (measured)", "net savings (at pi0)"].map((t) => h("th", {}, t))),
    h("tr", {},
      h("td", {}, day(newest.window_start)),
      cell("value_recall", newest, (v) => pct(v, 1)),
      cell("value_precision", valuePrecision, (v) => pct(v, 1)),
      cell("net_savings", net, money),
      calibrated("calibrated_net_savings", net, money)));
}

// ---- the shown period: the last N windows, or days from .. to (in the model's zone) ----------
const LASTS = ["30", "90", "365"];

function periodLink(name, segment, period) {
  const query = new URLSearchParams();
  if (segment && segment !== "all") query.set("segment", segment);
  for (const [key, value] of Object.entries(period)) if (value) query.set(key, value);
  const text = query.toString();
  return `#/models/${enc(name)}` + (text ? `?${text}` : "");
}

// Keeps the series' windows in the period (days compared as the page shows them: in the
// model's zone); the last N are the newest N windows of the AP series.
function shownPeriod(params, ap) {
  const from = params.get("from"), to = params.get("to"), last = Number(params.get("last")) || null;
  const within = (p) => (!from || day(p.window_start).slice(0, 10) >= from) && (!to || day(p.window_start).slice(0, 10) <= to);
  const starts = ap.points.filter(within).map((p) => p.window_start);
  const kept = new Set(last ? starts.slice(-last) : starts);
  const keep = (seriesList) => {
    for (const series of seriesList) series.points = series.points.filter((p) => kept.has(p.window_start));
  };
  return { from, to, last, keep };
}

function periodForm(name, segment, period) {
  const last = h("select", { id: "period-last", "aria-label": "windows shown" },
    h("option", { value: "" }, "all windows"),
    LASTS.map((n) => h("option", { value: n, selected: String(period.last) === n }, `the last ${n} windows`)));
  const from = h("input", { id: "period-from", type: "date", value: period.from || "", "aria-label": "first day" });
  const to = h("input", { id: "period-to", type: "date", value: period.to || "", "aria-label": "last day" });
  return h("form", {
    id: "period-form", class: "period",
    onsubmit: (event) => {
      event.preventDefault();
      location.hash = periodLink(name, segment, { last: last.value, from: from.value, to: to.value });
    },
  }, "Show ", last, " from ", from, " to ", to, " ", h("button", { type: "submit" }, "Apply"), " ",
  h("button", { type: "button", id: "refresh", onclick: () => ui.refresh() }, "Refresh"));
}

async function modelPage(name, params) {
  const segment = params.get("segment") || "all";
  const base = `/v1/models/${enc(name)}`;
  // Every series the page draws in one request (GET .../metrics with `also`): one round trip,
  // and the windows read once on the server instead of once a metric.
  const MONEY = ["value_recall", "value_precision", "net_savings"];
  const BUDGET = ["precision_at_k", "alerts", "precision_at_k_max", "entity_precision_at_k"];
  const asSeries = (all, metric) => ({ ...all, metric, points: all.also[metric] });
  const [model, ap, alerts, reference, pi0, status] = await Promise.all([
    calmon.get(base),
    calmon.get(`${base}/metrics`, { metric: "average_precision", segment, also: ["f1", ...MONEY] }),
    calmon.get(`${base}/alerts`),
    calmon.get(`${base}/reference`),
    calmon.get(`${base}/pi0`),
    calmon.get(`${base}/status`),
  ]);
  ui.setZone(model.timezone);
  const f1 = asSeries(ap, "f1");
  const money = MONEY.map((metric) => asSeries(ap, metric));
  // The alert budget's series only for a model that has one (known once the model is read).
  const budgetSeries = model.alert_capacity == null ? null
    : await calmon.get(`${base}/metrics`, { metric: BUDGET[0], segment, also: BUDGET.slice(1) });
  const budget = budgetSeries && [budgetSeries, ...BUDGET.slice(1).map((metric) => asSeries(budgetSeries, metric))];
  const period = shownPeriod(params, ap);
  period.keep([ap, f1, ...(budget || []), ...money]);
  const points = ap.points;
  // The catalogue needs a mature window; asked after the series so it does not delay them.
  const catalogue = points.some((p) => p.judged) ? calmon.get(`${base}/metric-catalogue`, { segment }) : null;
  const advice = points.length ? calmon.get(`${base}/threshold-advice`, { segment }) : null;
  const started = performance.now();
  const state = alerts.segments.find((s) => s.segment === segment);
  const ref = reference.segments.find((s) => s.segment === segment);
  const segments = [...new Set([...alerts.segments, ...reference.segments].map((s) => s.segment))].sort();
  const picker = h("select", {
    id: "segment-picker",
    onchange: (event) => { location.hash = modelLink(name, event.target.value); },
  }, segments.map((s) => h("option", { value: s, selected: s === segment }, s)));
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
  // A window still waiting for labels has no measured value, only its early estimate; its
  // legend value says its interval and how old its labels are. A window's last estimate may
  // stay stored once it is judged: its measured values replace it here.
  const waiting = (p) => (!p.mature && p.early ? p.early : null);
  const early = (series, key) => series.points.map((p) => (waiting(p) ? p.early[key] : null));
  const earlyBand = (series, key) => ({
    lo: series.points.map((p) => (waiting(p) && p.early[key] ? p.early[key][0] : null)),
    hi: series.points.map((p) => (waiting(p) && p.early[key] ? p.early[key][1] : null)),
    color: charts.EARLY.band,
  });
  const earlyAsOf = points.reduce((last, p) => (waiting(p) && (!last || p.early.as_of > last) ? p.early.as_of : last), null);
  const earlyLabel = (what) => `${what} from labels so far` + (earlyAsOf ? ` (as of ${day(earlyAsOf)})` : "");
  const describeEarly = (series, ciKey, f) => (v, i) => {
    const e = series.points[i].early;
    return `${f(v)}${e[ciKey] ? ` ${interval(e[ciKey], f)}` : ""}, ${lookText(e.look, model.granularity)}`;
  };
  const horizon = model.label_horizon_days;
  // Only a model with windows waiting for labels gets the estimate's legend entry.
  const anyEarly = points.some(waiting);
  const ifEarly = (...items) => (anyEarly ? items : []);
  const refLine = points.map(() => (ref ? ref.calibrated_average_precision : null));

  const summary = newestSummary(name, segment, points, model.granularity);
  const budgetTable = budget ? budgetSummary(model, ...budget) : null;
  const moneyTable = moneySummary(...money);

  const [apFig, apBox] = figure("Average precision: measured and calibrated", "chart-ap",
    "the dashed line is AP as measured, which moves with the fraud rate; the solid line is AP calibrated to the reference fraud rate pi0, which moves only when the model ranks better or worse. Bands (hatched: measured, plain: calibrated) are 95% bootstrap intervals; the dotted line is the reference's calibrated AP; hollow circles are estimates from scores before the labels arrive (measured AP's expected value), not measurements. A window still waiting for labels shows no measured value: the dashed teal line through hollow markers, with its shaded 95% band, is its calibrated AP estimated from the labels that arrived so far (what its complete labels are expected to show; hover for how long they have been arriving). Click a point for its window.");
  const [f1Fig, f1Box] = figure("F1 at the threshold: measured and calibrated", "chart-f1",
    "as above for F1 at the model's threshold: measured (dashed, hatched band) and at pi0 (solid, plain band); hollow circles are expected F1 estimated from scores. F1 is not estimated from labels so far: a window still waiting for labels shows none.");
  const [piFig, piBox] = figure("Fraud rate: measured pi, reference pi0, estimates from labels so far and from scores", "chart-pi",
    "the solid line is the share of fraud among a window's labelled rows, the dashed step is pi0, the prior every calibrated value is computed at; the shaded span is the windows the pi0 policy estimates it from, and a dashed vertical line marks where windows were computed at a different pi0. Hollow circles and their hatched band are the fraud rate estimated from scores alone, with its 95% interval: an estimate, available before labels. A window still waiting for labels has no measured pi (its first labels are mostly frauds, so the share would read high); the dashed teal line through hollow markers and its shaded band is the fraud rate its complete labels are expected to show, estimated from the labels so far.");
  const [effFig, effBox] = figure("Why AP moved: prior effect and performance effect", "chart-effects",
    "each window's AP change against the segment's reference, split in two: the prior effect (dashed) is what the fraud rate's move explains, the performance effect (solid) is the change of calibrated AP, the model's own. Only the performance effect can page.");
  const [covFig, covBox] = figure("Label coverage", "chart-coverage", horizon != null
    ? `the share of a window's rows that count as labelled. This model's labels are frauds and reviewed alerts only (label_horizon_days ${horizon}): every row counts, one without a fraud label as legitimate, so the coverage is full and says nothing of how complete the labels are. A window's labels are complete ${horizon} days after it ends; until then it is waiting for labels and its verdict is provisional.`
    : `the share of a window's rows that have a label. A window is judged once it reaches the model's minimum (dotted line, ${pct(model.min_label_coverage, 0)}); until then its verdict is provisional.`);

  render(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Models"), " / ", name),
    h("h1", {}, name, " ", h("label", { class: "picker" }, "segment ", picker)),
    periodForm(name, segment, period),
    h("p", {}, h("a", { id: "analyses-link", href: ui.analysesLink(name, segment) }, "What-if at other fraud rates, champion vs challenger →"),
      segments.length > 1 ? [" · ", h("a", { id: "segments-link", href: ui.segmentsLink(name) }, "Segments side by side at pi0 →")] : null,
      " · ", h("a", { id: "trust-link", href: ui.trustLink(name) }, "Which metric to trust →")),
    ...alertState(state, ap, reference, ref),
    ...parkedWindows(status),
    summary,
    ...(moneyTable ? [moneyTable, howTo("money, from each row's amount: the share of the window's fraud amount at or above the threshold (value recall), the fraud share of the flagged amount (value precision), and net savings, the fraud amount caught minus review_cost for each alert; at pi0: what a window of the same size would save at the reference fraud rate. 95% intervals; – with its reason on hover where a window's rows lack an amount or the model has no review_cost.")] : []),
    ...(budgetTable ? [budgetTable, howTo("the alert budget: alerts are the window's rows at or above the threshold, against the alert_capacity the team can check; precision at k is the fraud share of the window's k highest-scored rows (k = alert_capacity), measured and at the reference fraud rate pi0, with 95% intervals; best reachable is what a perfect ranking would get (fewer frauds than k cap it); card precision at k, where the rows name their card or account, is the fraud share of the k cards with the highest scores (a card at its highest score, a fraud if any of its rows is: one call covers a card).")] : []),
    h("h2", {}, "Verdicts, one mark per window"),
    ...verdictStrip(name, segment, points),
    howTo("each mark is one window, oldest left. ▼ and ◆ are drops the detector issued; ~ is a fraud-rate move with the model unchanged; · is not judged yet; a faded mark is provisional; an underlined mark is still waiting for labels (hover it for its estimate from the labels so far)."),
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
      ...ifEarly({ label: earlyLabel("calibrated AP estimated"), early: true, values: early(ap, "value"), describe: describeEarly(ap, "ci", num) }),
    ],
    bands: [measuredBand(ap), calibratedBand(ap), ...ifEarly(earlyBand(ap, "ci"))],
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
      ...ifEarly({ label: earlyLabel("pi estimated"), early: true, values: early(ap, "pi"), describe: describeEarly(ap, "pi_ci", percent) }),
    ],
    bands: [{
      lo: points.map((p) => (p.nowcast && p.nowcast.pi_ci ? p.nowcast.pi_ci[0] : null)),
      hi: points.map((p) => (p.nowcast && p.nowcast.pi_ci ? p.nowcast.pi_ci[1] : null)),
      color: "#6a3d9a", hatch: true,
    }, ...ifEarly(earlyBand(ap, "pi_ci"))],
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
      // A label horizon, not the coverage, decides when this model's windows mature.
      ...(horizon != null ? [] : [{ label: "minimum to judge", style: "reference", values: points.map(() => model.min_label_coverage) }]),
    ],
  });
  document.body.dataset.chartMs = (performance.now() - started).toFixed(1);
  if (advice) showAdvice(advice);
  if (catalogue) showCatalogue(catalogue);
}

ui.pages.model = modelPage;
