// Charts on uPlot (vendored): lines told apart by their dash pattern, not only by colour;
// interval bands, reference spans and version markers drawn under the lines.

export const charts = (function () {
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

  // Where windows are missing (more than 1.5 times the usual step between two starts; a day of
  // 23 or 25 hours at a clock change is not a gap) a null point is put between, so lines and
  // bands break there instead of drawing a smooth change that never happened. ``index`` maps a
  // charted point back to the caller's (null at an inserted gap).
  function withGaps(spec) {
    const x = spec.x;
    const steps = x.slice(1).map((v, i) => v - x[i]).filter((d) => d > 0);
    const step = steps.length ? Math.min(...steps) : Infinity;
    const index = [];
    x.forEach((v, i) => {
      if (i > 0 && v - x[i - 1] > 1.5 * step) index.push(null);
      index.push(i);
    });
    if (index.length === x.length) return { spec, index };
    const pad = (values) => (values ? index.map((i) => (i == null ? null : values[i])) : values);
    const gapX = index.map((i, k) => (i == null ? (x[index[k - 1]] + x[index[k + 1]]) / 2 : x[i]));
    const describe = (line) => (line.describe ? (v, k) => line.describe(v, index[k]) : undefined);
    return {
      index,
      spec: {
        ...spec,
        x: gapX,
        lines: spec.lines.map((line) => ({ ...line, values: pad(line.values), describe: describe(line) })),
        bands: (spec.bands || []).map((band) => ({ ...band, lo: pad(band.lo), hi: pad(band.hi) })),
      },
    };
  }

  // A chart over window starts (seconds since the epoch) in the model's time zone.
  function timeChart(el, given) {
    const { spec, index } = withGaps(given);
    const format = spec.format || ((v) => v.toFixed(3));
    const zone = spec.timezone || "UTC";
    const series = [{ label: `window start (${zone})` }];
    for (const line of spec.lines) series.push(lineSeries({ format, ...line }));
    const opts = {
      width: width(el),
      height: spec.height || 230,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), zone),
      scales: { x: { time: true }, y: spec.yRange ? { range: spec.yRange } : {} },
      series,
      axes: [
        { label: `window start (${zone})`, labelSize: 20 },
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
    el.dataset.gaps = String(index.filter((i) => i == null).length);
    if (spec.onPick) {
      chart.over.style.cursor = "pointer";
      chart.over.addEventListener("click", () => {
        const picked = chart.cursor.idx == null ? null : index[chart.cursor.idx];
        if (picked != null) spec.onPick(picked);
      });
    }
    return chart;
  }

  // Several curves on shared axes (each x-ascending): precision-recall, ROC, PR-Gain.
  function xyChart(el, spec) {
    const rows = [];
    spec.curves.forEach((curve, k) => {
      curve.x.forEach((v, i) => rows.push([v, k, curve.y[i]]));
    });
    rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const x = rows.map((row) => row[0]);
    const ys = spec.curves.map((_, k) => rows.map((row) => (row[1] === k ? row[2] : null)));
    const format = (v) => v.toFixed(3);
    const series = [{ label: spec.xName, value: (u, v) => (v == null ? "–" : format(v)) }];
    spec.curves.forEach((curve) => {
      const s = lineSeries({ label: curve.label, style: curve.style, format });
      s.spanGaps = true;
      series.push(s);
    });
    const opts = {
      width: width(el),
      height: 300,
      scales: { x: { time: false, range: spec.xRange || [0, 1] }, y: { range: spec.yRange || [0, 1] } },
      series,
      axes: [
        { label: spec.xLabel, labelSize: 20, values: (u, t) => t.map(format) },
        { label: spec.yLabel, labelSize: 20, size: 60, values: (u, t) => t.map(format) },
      ],
    };
    return new uPlot(opts, [x, ...ys], el);
  }

  // Precision against recall for several curves (each recall-ascending), on one recall axis.
  function prChart(el, spec) {
    return xyChart(el, {
      curves: spec.curves.map((c) => ({ ...c, x: c.recall, y: c.precision })),
      xName: "recall",
      xLabel: "recall (share of frauds caught)",
      yLabel: "precision",
    });
  }

  // The ROC curve: share of frauds caught against share of legitimate rows flagged.
  function rocChart(el, spec) {
    return xyChart(el, {
      curves: spec.curves.map((c) => ({ ...c, x: c.fpr, y: c.tpr })),
      xName: "false positive rate",
      xLabel: "false positive rate (share of legitimate rows flagged)",
      yLabel: "recall (true positive rate)",
    });
  }

  // PR-Gain curves (Flach & Kull 2015): gains over the always-flag baseline, from recall gain 0.
  // Precision gain can fall below 0 (worse than flagging everything); the axis shows down to -1.
  function gainChart(el, spec) {
    const lowest = Math.min(0, ...spec.curves.flatMap((c) => c.precision_gain));
    return xyChart(el, {
      curves: spec.curves.map((c) => ({ ...c, x: c.recall_gain, y: c.precision_gain })),
      xName: "recall gain",
      xLabel: "recall gain",
      yLabel: "precision gain",
      yRange: [Math.max(-1, lowest), 1],
    });
  }

  // Each metric's imbalance sensitivity s(r) against the ratio 1:r on a log axis, with a dashed
  // marker at the model's ratio. Metrics the imbalance does not move lie flat at 0.
  const PALETTE = ["#1f5fa8", "#b35806", "#1b7837", "#762a83", "#b2182b", "#35978f", "#8c510a", "#5e3c99", "#d6604d", "#4d4d4d"];
  function sensitivityChart(el, spec) {
    const format = (v) => v.toFixed(3);
    const series = [{ label: "ratio 1:r", value: (u, v) => (v == null ? "–" : `1:${Math.round(v)}`) }];
    spec.curves.forEach((curve, i) => series.push({
      label: curve.metric, stroke: PALETTE[i % PALETTE.length], width: curve.calibrated ? 2.5 : 1.5,
      dash: curve.calibrated ? [] : [5, 3], points: { show: false }, value: (u, v) => (v == null ? "–" : format(v)),
    }));
    const opts = {
      width: width(el),
      height: 320,
      scales: { x: { time: false, distr: 3, log: 10 }, y: { range: [0, 1] } },
      series,
      axes: [
        // Only the powers of 10 are labelled (uPlot's log axis gives the ticks between as well).
        { label: "imbalance ratio r (negatives per fraud, log scale)", labelSize: 20, values: (u, t) => t.map((v) => (v != null && Number.isInteger(Math.log10(v)) ? `1:${v.toLocaleString("en")}` : "")) },
        { label: "sensitivity s(r)", labelSize: 20, size: 60, values: (u, t) => t.map(format) },
      ],
      hooks: { drawAxes: [(u) => drawMarks(u, [], spec.markers || [])] },
    };
    return new uPlot(opts, [spec.ratios, ...spec.curves.map((c) => c.sensitivity)], el);
  }

  // A metric's surface over contingency space (TNR across, TPR up) as a heat map from white (0)
  // to dark blue (1), undefined cells hatched grey, with the windows' operating points on it.
  function surfaceChart(el, spec) {
    const px = window.devicePixelRatio || 1;
    const size = Math.min(width(el), 420);
    const canvas = document.createElement("canvas");
    canvas.width = size * px;
    canvas.height = size * px;
    canvas.style.width = `${size}px`;
    canvas.style.height = `${size}px`;
    el.replaceChildren(canvas);
    const ctx = canvas.getContext("2d");
    ctx.scale(px, px);
    const margin = 44, plot = size - margin - 8;
    const n = spec.centres.length, cell = plot / n;
    spec.values.forEach((row, i) => row.forEach((v, j) => {
      if (v == null) ctx.fillStyle = "#bbbbbb";
      else ctx.fillStyle = `rgb(${Math.round(255 - 224 * v)}, ${Math.round(255 - 160 * v)}, ${Math.round(255 - 87 * v)})`;
      // row i is TPR = centres[i]: drawn from the bottom up.
      ctx.fillRect(margin + j * cell, 8 + plot - (i + 1) * cell, cell + 0.5, cell + 0.5);
    }));
    ctx.strokeStyle = "#333";
    ctx.strokeRect(margin, 8, plot, plot);
    ctx.fillStyle = "#333";
    ctx.font = "11px sans-serif";
    ctx.textAlign = "center";
    for (const t of [0, 0.5, 1]) {
      ctx.fillText(t.toFixed(1), margin + t * plot, size - 22);
      ctx.fillText(t.toFixed(1), margin - 16, 8 + plot - t * plot + 4);
    }
    ctx.fillText("TNR (1 - FPR)", margin + plot / 2, size - 6);
    ctx.save();
    ctx.translate(12, 8 + plot / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText("TPR (recall)", 0, 0);
    ctx.restore();
    ctx.strokeStyle = "#b35806";
    ctx.fillStyle = "rgba(179, 88, 6, 0.35)";
    for (const w of spec.points) {
      ctx.beginPath();
      ctx.arc(margin + w.tnr * plot, 8 + plot - w.tpr * plot, 3.5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
    el.dataset.points = String(spec.points.length);
    return canvas;
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

  return { timeChart, prChart, rocChart, gainChart, priorChart, sensitivityChart, surfaceChart, STYLE, EARLY };
})();
