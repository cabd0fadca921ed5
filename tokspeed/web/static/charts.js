// tokspeed web: the page's charts, drawn in the browser with the vendored uPlot (static/vendor/) from the
// calculator JSON the page already has: no server round trip per chart. Legends sit below each plot.
"use strict";

const Charts = (() => {
  const plots = {};

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
  }
  function si(v) {
    if (v === null || v === undefined) return "";
    const a = Math.abs(v);
    for (const [u, s] of [["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]]) if (a >= s) return +(v / s).toPrecision(3) + " " + u;
    return +v.toPrecision(3) + "";
  }
  function ctxLabel(v) {
    return v >= 1024 ? (v / 1024 >= 10 ? Math.round(v / 1024) : +(v / 1024).toFixed(1)) + "K" : String(v);
  }
  function size(target) {
    const w = Math.max(240, Math.floor(target.clientWidth || target.parentElement.clientWidth || 320));
    return { width: w, height: w < 420 ? 220 : 270 };
  }
  function axis(label, values, extra) {
    return Object.assign({ label, values, stroke: css("--sub"), grid: { stroke: css("--line"), width: 1 },
      ticks: { stroke: css("--line") }, font: "11px system-ui", labelFont: "12px system-ui", size: 44, labelSize: 18 }, extra || {});
  }
  function draw(target, opts, data) {
    if (plots[target.id]) plots[target.id].destroy();
    target.replaceChildren();
    plots[target.id] = new uPlot(Object.assign(size(target), opts), data, target);
    return plots[target.id];
  }
  // a vertical marker with a label at the bottom of the plotting area
  function marker(u, x, text, color) {
    const ctx = u.ctx, px = u.valToPos(x, "x", true), top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
    if (!Number.isFinite(px) || px < u.bbox.left || px > u.bbox.left + u.bbox.width) return;
    ctx.save();
    ctx.strokeStyle = color;
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.lineWidth = devicePixelRatio;
    ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, bottom); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = color;
    ctx.font = (11 * devicePixelRatio) + "px system-ui";
    const w = ctx.measureText(text).width, pad = 4 * devicePixelRatio;
    const right = px + pad + w < u.bbox.left + u.bbox.width;
    ctx.textAlign = right ? "left" : "right";
    ctx.fillText(text, right ? px + pad : px - pad, bottom - pad);
    ctx.restore();
  }

  // decode tok/s of one token against the context it attends to; the chosen depth is marked
  function context(target, rows, pred) {
    const xs = rows.map((r) => r.context);
    const exp = rows.map((r) => r.tok_s), bound = rows.map((r) => r.bound_tok_s);
    const nofit = rows.map((r) => (r.fits ? null : r.tok_s));
    const now = pred.context + pred.prompt;
    const red = css("--red");
    return draw(target, {
      scales: { x: { distr: 3, log: 2 }, y: { range: (u, lo, hi) => [0, hi * 1.08] } },
      axes: [axis("context (tokens in the KV cache)", (u, v) => v.map(ctxLabel)),
        axis("tok/s", (u, v) => v.map(si))],
      series: [{ label: "context", value: (u, v) => (v === null ? "" : ctxLabel(v)) },
        { label: "expected", stroke: css("--blue"), width: 2, points: { show: true, size: 5 }, value: (u, v) => si(v) },
        { label: "bound (bandwidth ÷ bytes)", stroke: css("--sub"), dash: [6, 4], width: 1.5, value: (u, v) => si(v) },
        { label: "does not fit", stroke: red, paths: () => null, points: { show: true, size: 9, stroke: red, fill: red }, value: (u, v) => si(v) }],
      hooks: { draw: [(u) => marker(u, Math.max(now, xs[0]), "now: " + now.toLocaleString("en-US"), css("--kv"))] },
      legend: { live: true },
    }, [xs, exp, bound, nofit]);
  }

  // stages of one decode step and of the prefill at their attained FLOP/s against arithmetic intensity
  function roofline(target, pts, expl) {
    const dec = pts.decode || [], pre = pts.prefill || [];
    const all = [...dec, ...pre];
    const bw = expl.bandwidth_gbps * 1e9, peak = expl.matmul_tflops ? expl.matmul_tflops * 1e12 : null;
    const ridge = peak ? peak / bw : null;
    let lo = Math.min(0.1, ...all.map((p) => p.intensity)) / 2, hi = Math.max(1000, ...all.map((p) => p.intensity)) * 2;
    if (ridge) hi = Math.max(hi, ridge * 4);
    const xsSet = new Set([lo, hi, ...all.map((p) => p.intensity)]);
    if (ridge) xsSet.add(ridge);
    const xs = [...xsSet].sort((a, b) => a - b);
    const roof = xs.map((x) => (x === lo || x === hi || x === ridge ? (peak ? Math.min(peak, bw * x) : bw * x) : null));
    const at = (list) => { const m = new Map(list.map((p) => [p.intensity, p.flops_per_s])); return xs.map((x) => (m.has(x) ? m.get(x) : null)); };
    const labels = new Map(all.map((p) => [p.intensity, p.label]));
    const series = [{ label: "FLOP/byte", value: (u, v) => (v === null ? "" : si(v) + (labels.has(v) ? " · " + labels.get(v) : "")) },
      { label: peak ? "roof: min(peak, bandwidth × intensity)" : "memory roof (compute peak unknown)", stroke: css("--ink"), width: 2, spanGaps: true, value: (u, v) => si(v) },
      { label: "decode stages", stroke: css("--mem"), fill: css("--mem"), paths: () => null, points: { show: true, size: 8, stroke: css("--mem"), fill: css("--mem") }, value: (u, v) => si(v) }];
    const data = [xs, roof, at(dec)];
    if (pre.length) {
      series.push({ label: "prefill stages", stroke: css("--comp"), paths: () => null, points: { show: true, size: 8, stroke: css("--comp"), fill: css("--bg") }, value: (u, v) => si(v) });
      data.push(at(pre));
    }
    draw(target, {
      scales: { x: { distr: 3 }, y: { distr: 3 } },
      axes: [axis("arithmetic intensity (FLOP per byte)", (u, v) => v.map(si)), axis("FLOP/s", (u, v) => v.map(si))],
      series,
      hooks: { draw: ridge ? [(u) => marker(u, ridge, "ridge " + Math.round(ridge) + " FLOP/B", css("--sub"))] : [] },
    }, data);
    return peak ? "Left of the ridge a stage waits on memory; right of it on the tensor cores. Peak " + si(peak) + "FLOP/s, bandwidth " + si(bw) + "B/s."
      : "This device has no published FLOP/s figure: only the memory roof is drawn, and prefill is unknown.";
  }

  // `tokspeed serve`: output tok/s per GPU against tok/s per user, the best configuration of each layout as
  // points (filled: meets the SLOs) and the frontier through the undominated configurations
  function frontier(target, doc) {
    const pts = doc.configs.filter((c) => c.tok_s_per_user), line = doc.frontier || [];
    const xs = [...new Set([...pts.map((c) => c.tok_s_per_user), ...line.map((p) => p.tok_s_per_user)])].sort((a, b) => a - b);
    const at = (list, x, y) => { const m = new Map(list.map((p) => [x(p), y(p)])); return xs.map((v) => (m.has(v) ? m.get(v) : null)); };
    const ok = pts.filter((c) => c.meets_slo !== false), miss = pts.filter((c) => c.meets_slo === false);
    const gpu = (c) => c.output_tok_s_per_gpu, user = (c) => c.tok_s_per_user;
    return draw(target, {
      scales: { y: { range: (u, lo, hi) => [0, hi * 1.08] } },
      axes: [axis("tok/s per user (1 / TPOT p50)", (u, v) => v.map(si)), axis("output tok/s per GPU", (u, v) => v.map(si))],
      series: [{ label: "tok/s per user", value: (u, v) => (v === null ? "" : si(v)) },
        { label: "frontier", stroke: css("--blue"), width: 2, spanGaps: true, value: (u, v) => si(v) },
        { label: "meets the SLOs", stroke: css("--mem"), paths: () => null, points: { show: true, size: 8, stroke: css("--mem"), fill: css("--mem") }, value: (u, v) => si(v) },
        { label: "misses them", stroke: css("--red"), paths: () => null, points: { show: true, size: 8, stroke: css("--red"), fill: css("--bg") }, value: (u, v) => si(v) }],
      legend: { live: true },
    }, [xs, at(line, (p) => p.tok_s_per_user, (p) => p.tok_s_per_gpu), at(ok, user, gpu), at(miss, user, gpu)]);
  }

  return { context, roofline, frontier };
})();
