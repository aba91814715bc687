// Shared by the pages: element building, number and date formats, links, the verdict symbols.
"use strict";

/* exported ui -- read by the scripts loaded after this one (index.html) */
const ui = (function () {
  const app = document.getElementById("app");
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

  // Draws a page: its parts in order, leaving out the absent ones (replaceChildren itself would
  // print a null part as the text "null").
  function render(...parts) {
    app.replaceChildren(...parts.flat().filter((part) => part !== undefined && part !== null && part !== false));
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
  // A reason from the API with its ISO instants written as the pages write them.
  const readable = (text) => (text || "").replace(/(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|\+00:00)/g, "$1 $2 UTC");

  // A measured value, its interval, and the reason when it is undefined.
  function valueCell(value, attrs, f = num) {
    return h("td", { class: "num", title: attrs.reason || undefined, ...attrs.data }, f(value));
  }

  // Two kinds of estimate, never a measurement, each named on its tag: from the window's scores
  // alone (the nowcast) and from the labels that arrived so far (the early estimate).
  const ESTIMATE_KIND = {
    scores: ["estimate from scores", "estimated from the window's scores alone, not measured"],
    labels: ["estimate from labels so far", "what the window's complete labels are expected to show, from the labels that arrived so far: not measured"],
  };

  function estimateTag(kind = "scores") {
    const [text, title] = ESTIMATE_KIND[kind];
    return h("span", { class: `estimate-tag ${kind}`, title }, text);
  }

  // An estimated value ({value, ci}) with its interval; a dash when there is none.
  function estimated(e, f = num) {
    if (e == null || e.value == null) return "–";
    return e.ci ? `${f(e.value)} ${interval(e.ci, f)}` : f(e.value);
  }

  // How long a window's labels have been arriving at its early estimate's look (an hourly
  // model is looked at daily).
  function lookText(look, granularity) {
    const unit = granularity === "week" ? "week" : "day";
    return look === 0 ? "just ended" : `${look} ${unit}${look === 1 ? "" : "s"} after it ended`;
  }

  // A page that rests on early evidence (signal "early"), said for a fraud analyst.
  const onEarlyEvidence = (s) => !!s && (s.signals || []).includes("early");

  function earlyAlertText(s) {
    const e = s.early;
    return `This page rests on early evidence. In the ${e.windows} newest windows, whose labels are still arriving, ` +
      `the frauds reported so far score lower than the reference's frauds: the model ranks fraud worse. ` +
      `Together that is drop evidence ${num(e.drop_evidence, 2)} of ${num(s.threshold, 2)} needed to page, ` +
      `while the windows with complete labels alone are at ${num(s.drop_evidence, 2)}. ` +
      `As of ${when(e.as_of)}; the page stays on as these windows' labels complete, until the evidence says the drop ended.`;
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

  function figure(title, id, how) {
    const box = h("div", { class: "chart", id });
    return [h("figure", {}, h("h2", {}, title), box, howTo(how)), box];
  }

  return {
    app, h, render, num, pct, signed, interval, seconds, day, when, enc, readable, valueCell, estimateTag, estimated, lookText, onEarlyEvidence, earlyAlertText, howTo, modelLink, windowLink, figure, SEVERITY, STATE_TEXT, VERDICT_MARK, VERDICT_TEXT,
    pages: {},
  };
})();
