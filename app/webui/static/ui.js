// Shared by the pages: element building, number and date formats, links, the verdict symbols.

export const ui = (function () {
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
    addExports(app);
  }

  // ---- export of what is shown: every table as CSV, every chart as PNG -----------------------
  function download(name, blob) {
    const link = h("a", { href: URL.createObjectURL(blob), download: name, hidden: true });
    document.body.append(link);
    link.click();
    setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 0);
  }

  const slug = (text) => (text || "calmon").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  // The file's name: the page's heading, then the table's or chart's own heading or id.
  function fileName(el, extension) {
    const heading = app.querySelector("h1");  // its first text: the name, not a picker's options
    const page = slug(heading && heading.firstChild ? heading.firstChild.textContent : "");
    const caption = el.closest("figure") && el.closest("figure").querySelector("h2");
    const own = caption ? caption.textContent : el.id;
    return `${page}-${slug(own)}.${extension}`;
  }

  // A cell as CSV: quoted when it holds a comma, a quote or a line break.
  const csvCell = (text) => (/[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
  function tableCsv(table) {
    return [...table.rows].map((row) => [...row.cells].map((cell) => csvCell(cell.innerText.trim())).join(",")).join("\r\n") + "\r\n";
  }

  // Each exported table or chart and its buttons' paragraph: added once, removed with it.
  const exportsOf = new WeakMap();
  // uPlot's legend is a table inside its chart: the chart's PNG holds it, it gets no CSV.
  const exportable = (el) => (el.matches("table") ? !el.closest("div.chart") : el.matches("div.chart"));

  function exportButton(el) {
    if (el.matches("table")) {
      return h("button", {
        type: "button", class: "export", "data-export": "csv", "data-for": el.id || undefined,
        onclick: () => download(fileName(el, "csv"), new Blob([tableCsv(el)], { type: "text/csv" })),
      }, "CSV");
    }
    return h("button", {
      type: "button", class: "export", "data-export": "png", "data-for": el.id || undefined,
      onclick: () => {
        // uPlot draws into one canvas per chart, after the page is rendered.
        const canvas = el.querySelector("canvas");
        if (canvas) canvas.toBlob((blob) => download(fileName(el, "png"), blob), "image/png");
      },
    }, "PNG");
  }

  function addExports(root) {
    const found = [...root.querySelectorAll("table, div.chart")];
    if (root.matches && root.matches("table, div.chart")) found.unshift(root);
    for (const el of found) {
      if (exportsOf.has(el) || !exportable(el)) continue;
      const what = el.matches("table") ? "Download this table: " : "Download this chart: ";
      const buttons = h("p", { class: "exports" }, what, exportButton(el));
      exportsOf.set(el, buttons);
      el.after(buttons);
    }
  }

  function dropExports(root) {
    const gone = [...root.querySelectorAll("table, div.chart")];
    if (root.matches && root.matches("table, div.chart")) gone.unshift(root);
    for (const el of gone) {
      const buttons = exportsOf.get(el);
      if (buttons && !el.isConnected) buttons.remove();
    }
  }

  // Every table and chart gets its buttons whenever it is drawn, in one place: render() draws
  // a page, but parts arrive later (the threshold advice, the catalogue, a segment comparison,
  // a what-if answer, a chart redrawn), and each would otherwise need its own call.
  new MutationObserver((changes) => {
    for (const change of changes) {
      for (const node of change.removedNodes) if (node instanceof Element) dropExports(node);
      for (const node of change.addedNodes) if (node instanceof Element && node.isConnected) addExports(node);
    }
  }).observe(app, { childList: true, subtree: true });

  const num = (v, digits = 4) => (v == null ? "–" : v.toFixed(digits));
  const pct = (v, digits = 2) => (v == null ? "–" : (100 * v).toFixed(digits) + "%");
  const signed = (v, digits = 4) => (v == null ? "–" : (v > 0 ? "+" : "") + v.toFixed(digits));
  const interval = (ci, f = num) => (ci == null ? "–" : `[${f(ci[0])}, ${f(ci[1])}]`);
  const seconds = (iso) => Date.parse(iso) / 1000;
  // Times are shown in one zone, the model's (its windows are its days): a page sets it once it
  // has read the model, and the router resets it to UTC for every page. utc() is the same
  // instant in UTC, for hovers.
  let zone = "UTC";
  const setZone = (tz) => { zone = tz || "UTC"; };
  const formats = new Map();
  function inZone(iso, tz) {
    if (!formats.has(tz)) {
      formats.set(tz, new Intl.DateTimeFormat("en-CA", {
        timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
      }));
    }
    const parts = Object.fromEntries(formats.get(tz).formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
    return { date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}` };
  }
  const zoneName = (tz) => (tz === "UTC" ? "UTC" : `(${tz})`);
  // A window start as its day (or its hour, for hourly windows), in the zone.
  function day(iso, tz = zone) {
    if (iso == null) return "–";
    const { date, time } = inZone(iso, tz);
    return time === "00:00" ? date : `${date} ${time}${tz === "UTC" ? " UTC" : ""}`;
  }
  // An instant to the minute, in the zone, naming it.
  function when(iso, tz = zone) {
    if (iso == null) return "–";
    const { date, time } = inZone(iso, tz);
    return `${date} ${time} ${zoneName(tz)}`;
  }
  const utc = (iso) => (iso == null ? "–" : iso.slice(0, 16).replace("T", " ") + " UTC");
  const enc = encodeURIComponent;
  // A reason from the API with its ISO instants written as the pages write them (in the zone).
  const readable = (text) => (text || "").replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|\+00:00)/g, (iso) => when(iso));

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
    app, h, render, num, pct, signed, interval, seconds, day, when, utc, setZone, enc, readable, valueCell, estimateTag, estimated, lookText, onEarlyEvidence, earlyAlertText, howTo, modelLink, windowLink, figure, SEVERITY, STATE_TEXT, VERDICT_MARK, VERDICT_TEXT,
    pages: {},
  };
})();
