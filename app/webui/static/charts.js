// Charts on uPlot (vendored): lines told apart by their dash pattern, not only by colour;
// interval bands, reference spans and version markers drawn under the lines.
"use strict";

/* exported charts -- read by the scripts loaded after this one (index.html) */
const charts = (function () {
  const STYLE = {
    calibrated: { stroke: "#1f5fa8", width: 2, dash: [] },
    regular: { stroke: "#b35806", width: 1.5, dash: [7, 4] },
    reference: { stroke: "#444444", width: 1, dash: [2, 3] },
    second: { stroke: "#1b7837", width: 1.5, dash: [12, 3, 2, 3] },
  };
  // Estimates from scores (the nowcast, not measured): hollow markers and no line.
  const ESTIMATE = { stroke: "#6a3d9a", fill: "#ffffff", size: 7 };
  // Estimates from the labels so far (a window still waiting for labels): a dashed line through
  // hollow markers in their own colour, with a plain band (EARLY.band), never a solid line.
  const EARLY = { stroke: "#01796f", fill: "#ffffff", size: 8, dash: [5, 4], band: "rgba(1, 121, 111, 0.16)" };

  function hatch(color) {
    const tile = document.createElement("canvas");
    tile.width = tile.height = 8;
    const c = tile.getContext("2d");
    c.strokeStyle = color;
    c.lineWidth = 1;
    c.beginPath();
    c.moveTo(0, 8);
    c.lineTo(8, 0);
    c.stroke();
    return tile;
  }

  function clipToPlot(u) {
    const box = u.bbox;
    u.ctx.beginPath();
    u.ctx.rect(box.left, box.top, box.width, box.height);
    u.ctx.clip();
  }

  // Fills between lo and hi over each run of defined points (a lone point: a short bar).
  function drawBand(u, band) {
    const xs = u.data[0];
    const ctx = u.ctx;
    ctx.save();
    clipToPlot(u);
    ctx.fillStyle = band.hatch ? ctx.createPattern(hatch(band.color), "repeat") : band.color;
    let run = [];
    const flush = () => {
      if (run.length === 1) {
        const [x, l, h] = run[0];
        ctx.fillRect(x - 2, h, 4, l - h);
      } else if (run.length > 1) {
        ctx.beginPath();
        run.forEach(([x, , h], i) => (i ? ctx.lineTo(x, h) : ctx.moveTo(x, h)));
        for (let i = run.length - 1; i >= 0; i--) ctx.lineTo(run[i][0], run[i][1]);
        ctx.closePath();
        ctx.fill();
      }
      run = [];
    };
    for (let i = 0; i < xs.length; i++) {
      const lo = band.lo[i];
      const hi = band.hi[i];
      if (lo == null || hi == null) {
        flush();
        continue;
      }
      run.push([u.valToPos(xs[i], "x", true), u.valToPos(lo, "y", true), u.valToPos(hi, "y", true)]);
    }
    flush();
    ctx.restore();
  }

  function drawMarks(u, spans, markers) {
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    const px = window.devicePixelRatio || 1;
    ctx.save();
    clipToPlot(u);
    ctx.font = `${11 * px}px sans-serif`;
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    for (const span of spans) {
      const x0 = u.valToPos(span.from, "x", true);
      const x1 = u.valToPos(span.to, "x", true);
      ctx.fillStyle = "rgba(0, 0, 0, 0.07)";
      ctx.fillRect(x0, top, Math.max(x1 - x0, 2 * px), height);
      ctx.fillStyle = "#333333";
      ctx.fillText(span.label, x0 + 3 * px, top + 12 * px);
    }
    ctx.strokeStyle = "#333333";
    ctx.setLineDash([3 * px, 3 * px]);
    ctx.lineWidth = px;
    markers.forEach((marker, i) => {
      const x = u.valToPos(marker.x, "x", true);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.fillStyle = "#333333";
      ctx.fillText(marker.label, x + 3 * px, top + (26 + 12 * (i % 3)) * px);
    });
    ctx.restore();
  }

  function lineSeries(spec) {
    const style = STYLE[spec.style] || STYLE.calibrated;
    // The legend's value at the cursor; an estimate may say more about its point (its interval
    // and look) through spec.describe(value, index).
    const value = (u, v, _, i) => (v == null ? "–" : spec.describe ? spec.describe(v, i) : spec.format(v));
    if (spec.early) {
      return {
        label: spec.label,
        stroke: EARLY.stroke,
        width: 1.5,
        dash: EARLY.dash,
        points: { show: true, size: EARLY.size, width: 1.5, stroke: EARLY.stroke, fill: EARLY.fill },
        value,
      };
    }
    if (spec.estimate) {
      return {
        label: spec.label,
        stroke: ESTIMATE.stroke,
        width: 1,
        paths: () => null,
        points: { show: true, size: ESTIMATE.size, stroke: ESTIMATE.stroke, fill: ESTIMATE.fill },
        value,
      };
    }
    return {
      label: spec.label,
      stroke: style.stroke,
      width: style.width,
      dash: style.dash,
      paths: spec.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
      points: { show: false },
      value,
    };
  }

  function width(el) {
    return Math.max(Math.floor(el.getBoundingClientRect().width) - 4, 320);
  }

  // A chart over window starts (seconds since the epoch) in the model's time zone.
  function timeChart(el, spec) {
    const format = spec.format || ((v) => v.toFixed(3));
    const series = [{ label: "window start" }];
    for (const line of spec.lines) series.push(lineSeries({ format, ...line }));
    const opts = {
      width: width(el),
      height: spec.height || 230,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), spec.timezone || "UTC"),
      scales: { x: { time: true }, y: spec.yRange ? { range: spec.yRange } : {} },
      series,
      axes: [
        { label: `window start (${spec.timezone || "UTC"})`, labelSize: 20 },
        { label: spec.yLabel, labelSize: 20, size: 60, values: (u, ticks) => ticks.map(format) },
      ],
      hooks: {
        drawAxes: [
          (u) => {
            drawMarks(u, spec.spans || [], spec.markers || []);
            for (const band of spec.bands || []) drawBand(u, band);
          },
        ],
      },
    };
    const data = [spec.x, ...spec.lines.map((line) => line.values)];
    const chart = new uPlot(opts, data, el);
    if (spec.onPick) {
      chart.over.style.cursor = "pointer";
      chart.over.addEventListener("click", () => {
        if (chart.cursor.idx != null) spec.onPick(chart.cursor.idx);
      });
    }
    return chart;
  }

  // Precision against recall for several curves (each recall-ascending), on one recall axis.
  function prChart(el, spec) {
    const rows = [];
    spec.curves.forEach((curve, k) => {
      curve.recall.forEach((r, i) => rows.push([r, k, curve.precision[i]]));
    });
    rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const x = rows.map((row) => row[0]);
    const ys = spec.curves.map((_, k) => rows.map((row) => (row[1] === k ? row[2] : null)));
    const format = (v) => v.toFixed(3);
    const series = [{ label: "recall", value: (u, v) => (v == null ? "–" : format(v)) }];
    spec.curves.forEach((curve) => {
      const s = lineSeries({ label: curve.label, style: curve.style, format });
      s.spanGaps = true;
      series.push(s);
    });
    const opts = {
      width: width(el),
      height: 300,
      scales: { x: { time: false, range: [0, 1] }, y: { range: [0, 1] } },
      series,
      axes: [
        { label: "recall (share of frauds caught)", labelSize: 20, values: (u, t) => t.map(format) },
        { label: "precision", labelSize: 20, size: 60, values: (u, t) => t.map(format) },
      ],
    };
    return new uPlot(opts, [x, ...ys], el);
  }

  // Values against the fraud rate (x in 0-1, shown in %): what-if curves, with their bands and
  // dashed vertical markers at the fraud rates named on the page.
  function priorChart(el, spec) {
    const format = spec.format || ((v) => v.toFixed(3));
    const percent = (v) => (100 * v).toFixed(3) + "%";
    const series = [{ label: "fraud rate", value: (u, v) => (v == null ? "–" : percent(v)) }];
    for (const line of spec.lines) series.push(lineSeries({ format, ...line }));
    const opts = {
      width: width(el),
      height: spec.height || 260,
      scales: { x: { time: false }, y: spec.yRange ? { range: spec.yRange } : {} },
      series,
      axes: [
        { label: "fraud rate pi (%)", labelSize: 20, values: (u, ticks) => ticks.map(percent) },
        { label: spec.yLabel, labelSize: 20, size: 60, values: (u, ticks) => ticks.map(format) },
      ],
      hooks: {
        drawAxes: [
          (u) => {
            drawMarks(u, [], spec.markers || []);
            for (const band of spec.bands || []) drawBand(u, band);
          },
        ],
      },
    };
    return new uPlot(opts, [spec.x, ...spec.lines.map((line) => line.values)], el);
  }

  return { timeChart, prChart, priorChart, STYLE, EARLY };
})();
