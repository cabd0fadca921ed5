// tokspeed web: the form drives /api/calculator (and /api/alternatives when a setup does not fit); the page,
// its tables and its charts (charts.js, uPlot) are drawn here from that JSON. Settings live in the URL hash.
"use strict";

const $ = (id) => document.getElementById(id);
const FIELDS = ["model", "hardware", "quant", "kv_dtype", "engine", "engine_version", "flash_attn", "context", "batch", "prompt", "gen",
  "gpus", "parallel", "offload"];
const DEFAULTS = { gpus: "1", parallel: "", offload: "none", engine_version: "", flash_attn: "auto" };          // left out of requests and links when unchanged
const CUSTOM = ["bandwidth_gbps", "memory_gb", "fp16_tflops"];
let hardware = {}, models = {};
let seq = 0;                // only the latest request may write the page
let last = null;            // the latest calculator document
const compareRows = [];     // [{kind, value}]
const timing = { lastRedrawMs: null, lastTotalMs: null };
window.tokspeedTiming = timing;

function fmtRate(x) {
  if (x >= 100) return Math.round(x).toLocaleString("en-US");
  if (x >= 10) return x.toFixed(1);
  return x.toFixed(2);
}
function fmtBytes(n) {
  for (const [u, s] of [["TB", 1e12], ["GB", 1e9], ["MB", 1e6], ["KB", 1e3]]) if (Math.abs(n) >= s) return (n / s).toFixed(2) + " " + u;
  return n.toFixed(0) + " B";
}
function fmtSeconds(s) {
  if (s >= 1) return s.toFixed(2) + " s";
  if (s >= 1e-3) return (s * 1e3).toFixed(2) + " ms";
  return (s * 1e6).toFixed(1) + " µs";
}
const known = (x) => x !== null && x !== undefined && Number.isFinite(x);
const orUnknown = (x, f) => (known(x) ? f(x) : "unknown");
const n0 = (x) => x.toLocaleString("en-US");
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function option(value, label, selected) {
  const o = el("option", "", label);
  o.value = value;
  if (selected) o.selected = true;
  return o;
}
async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  const body = await r.json().catch(() => ({ error: "bad response (" + r.status + ")" }));
  if (!r.ok) throw new Error(body.error + (body.suggestion ? " (" + body.suggestion + ")" : ""));
  return body;
}

// ---- settings ----------------------------------------------------------------------------------------
function params() {
  const p = new URLSearchParams();
  for (const f of FIELDS) {
    const v = $(f).value.trim();
    if (DEFAULTS[f] !== undefined && (v === DEFAULTS[f] || v === "")) continue;
    p.set(f, v);
  }
  if ($("hardware").value === "custom") {
    for (const f of CUSTOM) if ($(f).value.trim() !== "") p.set(f, $(f).value.trim());
  }
  return p;
}
function explainMode() {
  return $("mode-prefill").checked ? "prefill" : "decode";
}
function saveHash(p) {
  const h = new URLSearchParams(p);
  if ((h.get("model") || "").startsWith("upload:")) h.delete("model");     // uploads do not outlive the server
  if (explainMode() === "prefill") h.set("explain", "prefill");
  history.replaceState(null, "", "#" + h);
}
function setField(f, v) {
  const e = $(f);
  if (e.tagName === "SELECT" && ![...e.options].some((o) => o.value === v)) return false;
  e.value = v;
  return true;
}
// the build and -fa are llama.cpp's (and its front ends'): other engines have neither, so they are cleared and off
const LLAMA_CPP_ENGINES = /^(llama\.cpp|ollama|lm-studio)/;
function showEngineBuild() {
  const llama = LLAMA_CPP_ENGINES.test($("engine").value);
  if (!llama) { setField("engine_version", ""); setField("flash_attn", "auto"); }
  $("engine_version").disabled = !llama;
  $("flash_attn").disabled = !llama;
}
function loadHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  for (const f of [...FIELDS, ...CUSTOM]) {
    const v = h.get(f);
    if (v !== null) setField(f, v);
  }
  if (h.get("explain") === "prefill") $("mode-prefill").checked = true;
}

function showError(msg) {
  $("error").textContent = msg;
  $("error").classList.toggle("hidden", !msg);
  document.body.classList.toggle("has-error", !!msg);
}
function setValue(id, value, text) {
  $(id).textContent = text;
  $(id).dataset.value = String(value);
}

// ---- the headline and the cards ------------------------------------------------------------------------
function hwName(d) {
  if (d.hardware === "custom") return "the custom device";
  return (hardware[d.hardware] || {}).name || d.hardware;
}
function renderHeadline(d) {
  const m = d.memory, dec = d.decode;
  const setup = d.model + " · " + d.quant + " on " + (d.devices && d.devices.count > 1 ? d.devices.count + " × " : "") + hwName(d);
  const h = $("headline");
  h.classList.toggle("nofit", !m.fits);
  document.body.classList.toggle("hypothetical", !!d.hypothetical);
  if (m.fits) {
    $("headline-text").textContent = setup + ": " + fmtRate(dec.tok_s) + " tok/s decode" +
      (known(d.ttft_s) ? ", first token after " + fmtSeconds(d.ttft_s) : (d.prompt > 0 ? ", time to first token unknown" : "")) + ".";
  } else {
    $("headline-text").textContent = setup + " does not fit: it needs " + fmtBytes(m.total_bytes) + ", the memory holds " +
      fmtBytes(m.capacity_bytes) + ". The numbers below are hypothetical; the ways it would run:";
  }
}
function renderWays(ways, pending) {
  const ul = $("ways");
  ul.replaceChildren();
  ul.classList.toggle("hidden", !pending && ways === null);
  if (pending) { ul.append(el("li", "hint", "finding the ways it would run …")); return; }
  if (!ways) return;
  if (!ways.length) ul.append(el("li", "", "none found with this engine: try a larger device"));
  for (const w of ways) {
    const li = el("li", w.fits ? "way ok" : "way no");
    const b = el("button", "", w.label);
    b.type = "button";
    b.title = "apply: " + Object.entries(w.settings).map(([k, v]) => k + "=" + v).join(", ");
    b.addEventListener("click", () => {
      for (const [k, v] of Object.entries(w.settings)) setField(k, v);
      showEngineBuild();
      update();
    });
    if (!w.fits) li.classList.add("no");
    li.append(b, el("span", "fig", (known(w.tok_s) ? fmtRate(w.tok_s) + " tok/s" : "speed unknown") +
      (w.fits ? "" : " · still does not fit")));
    ul.append(li);
  }
}

function renderPrediction(d) {
  const dec = d.decode, m = d.memory, pf = d.prefill;
  renderHeadline(d);
  setValue("out-tok-s", dec.tok_s, fmtRate(dec.tok_s));
  $("out-ms").textContent = dec.ms_per_token.toFixed(2) + " ms/token · " + dec.bound + "-bound · range " + fmtRate(dec.tok_s_low) +
    "–" + fmtRate(dec.tok_s_high) + " · average over " + n0(d.gen) + " generated tokens";
  setValue("out-bound", dec.bound_tok_s, fmtRate(dec.bound_tok_s));
  const bw = d.hardware === "custom" ? parseFloat($("bandwidth_gbps").value) : (hardware[d.hardware] || {}).bandwidth_gbps;
  $("out-bound-how").textContent = bw ? bw + " GB/s ÷ " + fmtBytes(dec.bytes_per_token) + " per token" : "bandwidth ÷ bytes per token";
  setValue("out-bytes", dec.bytes_per_token, fmtBytes(dec.bytes_per_token));
  $("out-bytes-how").textContent = "weights " + fmtBytes(dec.weight_bytes_per_token) + " + KV " + fmtBytes(dec.kv_bytes_per_token);
  $("out-prefill").closest(".card").classList.toggle("unknown", d.prompt > 0 && !known(pf.tok_s));
  if (d.prompt === 0) {
    setValue("out-prefill", 0, "–");
    $("out-prefill-how").textContent = "no prompt";
    $("out-ttft-v").textContent = "–";
    $("out-ttft").textContent = "no prompt";
  } else if (!known(pf.tok_s)) {
    $("out-prefill").textContent = "unknown";
    delete $("out-prefill").dataset.value;
    $("out-prefill-how").textContent = "no published FP16 TFLOPS for this device";
    $("out-ttft-v").textContent = "unknown";
    $("out-ttft").textContent = "needs the prefill speed";
  } else {
    setValue("out-prefill", pf.tok_s, fmtRate(pf.tok_s));
    $("out-prefill-how").textContent = n0(d.prompt) + " tokens · " + pf.bound + "-bound";
    $("out-ttft-v").textContent = fmtSeconds(d.ttft_s);
    $("out-ttft").textContent = "prefill of " + n0(d.prompt) + " tokens + one decode step";
  }
  if (m.fits || m.max_context > 0) {
    const win = (models[d.model] || {}).max_context;
    const capped = win && m.max_context > win;
    $("out-largest").textContent = n0(capped ? win : m.max_context) + " tok";
    $("out-largest-how").textContent = (capped ? "the model's window (memory would hold " + n0(m.max_context) + ")" : "context at batch " + d.batch) +
      " · batch up to " + n0(m.max_batch) + " at this context";
  } else {
    $("out-largest").textContent = "nothing";
    $("out-largest-how").textContent = "the weights alone do not fit";
  }
  const cost = d.cost || {};
  if (known(cost.joules_per_token) && cost.joules_per_token > 0) {
    $("out-energy").textContent = cost.joules_per_token.toFixed(cost.joules_per_token >= 10 ? 0 : 2) + " J";
    $("out-energy-how").textContent = "at " + cost.power_w + " W board power · " + cost.kwh_per_million_tokens.toFixed(2) + " kWh per million tokens";
  } else {
    $("out-energy").textContent = "unknown";
    $("out-energy-how").textContent = "no power figure for this device";
  }
  setValue("out-memory", m.total_bytes, fmtBytes(m.total_bytes) + " of " + fmtBytes(m.capacity_bytes));
  $("out-fit").textContent = m.fits ? "fits" : "does not fit";
  $("out-fit").className = "badge " + (m.fits ? "ok" : "no");
  const scale = Math.max(m.total_bytes, m.capacity_bytes) * 1.05;
  const segs = $("membar").querySelectorAll(".seg");
  [m.weights_bytes, m.kv_bytes, m.activations_bytes, m.overhead_bytes].forEach((v, i) => {
    segs[i].style.width = (100 * v / scale).toFixed(3) + "%";
    segs[i].title = ["weights", "KV cache", "activations", "engine runtime"][i] + ": " + fmtBytes(v);
  });
  if (m.host_bytes > 0) segs[0].title += " (and the token embedding, " + fmtBytes(m.host_bytes) + ", in host RAM)";
  $("memcap").style.left = (100 * m.capacity_bytes / scale).toFixed(3) + "%";
  $("memcap").title = "capacity " + fmtBytes(m.capacity_bytes);
  $("source").textContent = "engine model: " + d.engine_source;
}

// ---- the journey and the levers ----------------------------------------------------------------------
const PHASES = { cpu: "CPU", embedding: "GPU · embedding", layer: "GPU · every layer", head: "GPU · head" };

function renderExplain(x, pred) {
  let what;
  if (x.mode === "prefill") {
    what = "The prefill: " + n0(x.tokens) + " prompt tokens after " + n0(x.context) + " cached";
  } else {
    what = "The first generated token, at context " + n0(x.context) + " (" + n0(pred.context) + " cached + " + n0(pred.prompt) + " prompt)";
  }
  let tail = " on " + hwName(x) + " (" + x.engine + "): " + fmtSeconds(x.total_s) + " = " + fmtRate(x.tok_s / x.batch) + " tok/s. The stages below sum to it.";
  if (x.mode === "prefill") {
    tail += " Prefill as a whole is " + x.prediction.prefill.bound + "-bound: matmuls reuse each weight for many tokens.";
  } else if (pred.gen > 1) {
    tail += " The card's " + fmtRate(pred.decode.tok_s) + " tok/s is the average over all " + n0(pred.gen) +
      " generated tokens, as the KV cache grows to " + n0(pred.context + pred.prompt + pred.gen) + ".";
  }
  if ((pred.devices && pred.devices.count > 1) || pred.offload) tail += " The journey is of one device without offload.";
  $("journey-head").textContent = what + tail;
  const body = $("journey").tBodies[0];
  body.replaceChildren();
  let phase = null, i = 0;
  for (const s of x.stages) {
    if (s.phase !== phase) {
      phase = s.phase;
      const tr = el("tr", "phase");
      const td = el("td", "", PHASES[phase] + (phase === "layer" ? " (× " + s.layers + " layers)" : ""));
      td.colSpan = 9;
      tr.append(td);
      body.append(tr);
    }
    const tr = el("tr");
    const name = el("td");
    name.append(el("div", "", s.label));
    if (s.note) name.append(el("div", "note", s.note));
    const share = el("td");
    const wrap = el("div", "share");
    const bar = el("i");
    bar.style.width = Math.max(s.share * 80, 0).toFixed(1) + "px";
    wrap.append(bar, document.createTextNode((100 * s.share).toFixed(1) + "%"));
    share.append(wrap);
    tr.append(el("td", "n", String(++i)), name, el("td", "", s.unit), el("td", "", s.data_from),
      el("td", "n", s.bytes ? fmtBytes(s.bytes) : ""), el("td", "n", s.bytes ? s.intensity.toFixed(1) : ""),
      el("td", "b-" + s.bound, s.bound), el("td", "n", fmtSeconds(s.seconds)), share);
    body.append(tr);
  }
  const tot = el("tr");
  const lab = el("td"); lab.append(el("b", "", "total"));
  const t = el("td", "n"); t.append(el("b", "", fmtSeconds(x.total_s))); t.id = "journey-total"; t.dataset.value = String(x.total_s);
  tot.append(el("td"), lab, el("td"), el("td"), el("td"), el("td"), el("td"), t, el("td", "", "100%"));
  body.append(tot);
  $("journey-foot").textContent = (known(x.ridge_flops_per_byte)
    ? "Ridge point " + x.ridge_flops_per_byte.toFixed(0) + " FLOP/byte (" + x.matmul_tflops.toFixed(1) + " TFLOPS ÷ " + x.bandwidth_gbps + " GB/s): stages far below it wait on memory. "
    : "No published FLOP/s figure for this device: its ridge point is unknown, stage times assume memory-bound. ") +
    n0(x.kernels) + " kernel launches per token.";
  const lv = $("levers").tBodies[0];
  lv.replaceChildren();
  const now = el("tr", "now");
  now.append(el("td", "", "now"), el("td", "", "as set"), el("td", "n", fmtRate(x.tok_s / x.batch)),
    el("td", "n", fmtBytes(x.prediction.decode.bytes_per_token)), el("td", "n", "1.00×"),
    el("td", "", x.prediction.memory.fits ? "yes" : "no"));
  lv.append(now);
  for (const l of x.levers) {
    const tr = el("tr");
    tr.append(el("td", "", l.lever), el("td", "", l.what_if), el("td", "n", orUnknown(l.tok_s, fmtRate)), el("td", "n", fmtBytes(l.bytes_per_token)),
      el("td", "n " + (l.speedup >= 1 ? "up" : "down"), orUnknown(l.speedup, (v) => v.toFixed(2) + "×")), el("td", "", l.fits ? "yes" : "no"));
    lv.append(tr);
  }
}

// ---- one update ----------------------------------------------------------------------------------------
function render(doc) {
  const t0 = performance.now();
  const pred = doc.prediction;
  renderPrediction(pred);
  renderExplain(doc.explanation, pred);
  Charts.context($("chart-context"), doc.context_curve, pred);
  const note = Charts.roofline($("chart-roofline"), doc.roofline, doc.explanation);
  $("roofline-note").textContent = note;
  timing.lastRedrawMs = performance.now() - t0;
}

async function update() {
  const my = ++seq;
  const t0 = performance.now();
  const p = params();
  saveHash(p);
  const q = new URLSearchParams(p);
  q.set("explain", explainMode());
  $("dl-report").href = "/api/report.html?" + p;
  document.body.classList.add("busy");
  try {
    const doc = await getJSON("/api/calculator?" + q);
    if (my !== seq) return;
    showError("");
    last = doc;
    render(doc);
    renderWays(null, !doc.prediction.memory.fits);
    timing.lastTotalMs = performance.now() - t0;
    document.body.dataset.updated = String(my);
    if (!doc.prediction.memory.fits) {
      try {
        const alt = await getJSON("/api/alternatives?" + p);
        if (my === seq) renderWays(alt.alternatives, false);
      } catch (err) {                      // e.g. a prompt too long to search: say so where the ways go
        if (my === seq) { renderWays(null, false); $("ways").classList.remove("hidden"); $("ways").append(el("li", "hint", err.message)); }
      }
    }
    refreshCompare();
  } catch (err) {
    if (my === seq) showError(err.message);
  } finally {
    if (my === seq) document.body.classList.remove("busy");
  }
}

let timer = null;
function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 60);
}

// ---- form helpers --------------------------------------------------------------------------------------
function showHardware() {
  const v = $("hardware").value;
  $("custom").classList.toggle("hidden", v !== "custom");
  const h = hardware[v];
  $("hw-info").textContent = h ? h.memory_gb + " GiB · " + h.bandwidth_gbps + " GB/s · " +
    (h.fp16_tflops ? h.fp16_tflops + " TFLOPS FP16" : "FP16 TFLOPS not published (prefill unknown)") : "";
  $("fit-device").textContent = h ? "on " + h.name : "";
  fillCompareValues();
}

function modelLabel(m) {
  return m.name + " · " + m.params_b.toFixed(2) + " B" + (m.moe ? " MoE (" + m.active_params_b.toFixed(1) + " B active)" : "");
}
function filterModels() {
  const words = $("model-search").value.toLowerCase().split(/\s+/).filter(Boolean);
  let first = null;
  for (const o of $("model").options) {
    const m = models[o.value];
    const hay = m ? [m.id, m.name, m.family, m.hf_id || "", m.params_b + "b", m.moe ? "moe" : "dense"].join(" ").toLowerCase() : o.textContent.toLowerCase();
    const hit = words.every((w) => hay.includes(w));
    o.hidden = !hit;
    if (hit && first === null) first = o;
  }
  const cur = $("model").selectedOptions[0];
  if (first && (!cur || cur.hidden)) { $("model").value = first.value; schedule(); }
}

async function upload(file) {
  const gguf = file.name.toLowerCase().endsWith(".gguf");
  const limit = gguf ? 32 << 20 : 1 << 20;
  const blob = gguf ? file.slice(0, Math.min(file.size, limit)) : file;  // a GGUF's header is at its start
  $("upload-status").textContent = "reading " + file.name + " …";
  try {
    if (!gguf && file.size > limit) throw new Error("a config.json over 1 MB is not a config.json");
    const q = new URLSearchParams({ kind: gguf ? "gguf" : "config" });
    if (gguf) { q.set("name", file.name.replace(/\.gguf$/i, "")); q.set("size", String(file.size)); }
    const r = await getJSON("/api/upload?" + q, { method: "POST", body: blob,
      headers: { "Content-Type": "application/octet-stream" } });
    const label = file.name + " (" + r.params_b + " B params, " + r.n_layers + " layers)";
    $("model").append(option(r.model, "⬆ " + label, true));
    $("upload-status").textContent = "uploaded: " + label;
    schedule();
  } catch (err) {
    $("upload-status").textContent = "";
    showError("upload: " + err.message);
  }
}

// ---- side by side --------------------------------------------------------------------------------------
function fillCompareValues() {
  const kind = $("cmp-kind").value, sel = $("cmp-value");
  sel.replaceChildren();
  if (kind === "hardware") for (const h of Object.values(hardware)) sel.append(option(h.id, h.name, false));
  else for (const o of $("quant").options) sel.append(option(o.value, o.value, false));
}
async function refreshCompare() {
  const body = $("compare").tBodies[0];
  const base = params();
  const rows = [{ kind: null, value: null }, ...compareRows];
  const docs = await Promise.all(rows.map(async (r) => {
    const p = new URLSearchParams(base);
    if (r.kind) {
      p.set(r.kind, r.value);
      if (r.kind === "hardware") for (const f of CUSTOM) p.delete(f);
    }
    try { return await getJSON("/api/predict?" + p); } catch (e) { return { error: e.message }; }
  }));
  body.replaceChildren();
  rows.forEach((r, i) => {
    const d = docs[i], tr = el("tr", i === 0 ? "now" : "");
    const name = i === 0 ? "now: " + $("quant").value + " on " + ($("hardware").selectedOptions[0] || {}).textContent
      : (r.kind === "hardware" ? (hardware[r.value] || {}).name || r.value : r.value + " weights");
    tr.append(el("td", "", name));
    if (d.error) {
      const td = el("td", "", d.error); td.colSpan = 4; tr.append(td);
    } else {
      tr.append(el("td", "", d.memory.fits ? "yes" : "no (hypothetical)"),
        el("td", "n", fmtRate(d.decode.tok_s)), el("td", "n", orUnknown(d.ttft_s, fmtSeconds)), el("td", "n", fmtBytes(d.memory.total_bytes)));
    }
    const x = el("td");
    if (i > 0) {
      const b = el("button", "", "×"); b.type = "button"; b.title = "remove";
      b.addEventListener("click", () => { compareRows.splice(i - 1, 1); refreshCompare(); });
      x.append(b);
    }
    tr.append(x);
    body.append(tr);
  });
}

// ---- what runs here ----------------------------------------------------------------------------------
let fitRows = [];
async function runFit() {
  const hwId = $("hardware").value;
  const body = $("fit").tBodies[0];
  body.replaceChildren(el("tr", "", ""));
  body.firstChild.append(el("td", "hint", "ranking …"));
  try {
    if (hwId === "custom") throw new Error("the ranking needs a catalog device");
    const q = new URLSearchParams({ hardware: hwId, context: $("context").value || "0", prompt: $("prompt").value || "0",
      engine: $("engine").value });
    if ($("engine_version").value.trim()) q.set("engine_version", $("engine_version").value.trim());
    if ($("flash_attn").value !== "auto") q.set("flash_attn", $("flash_attn").value);
    const doc = await getJSON("/api/fit?" + q);
    fitRows = doc.rows;
    body.replaceChildren();
    for (const r of fitRows) {
      const tr = el("tr", r.fits ? "" : "dim");
      const dec = r.decode || {}, pf = r.prefill || {}, mem = r.memory || {};
      tr.append(el("td", "", r.model), el("td", "", r.quant), el("td", "", r.fits ? "yes" : r.reason ? "no: window" : "no: hypothetical"),
        el("td", "n", known(mem.total_bytes) ? fmtBytes(mem.total_bytes) : ""), el("td", "n", orUnknown(dec.tok_s, fmtRate)),
        el("td", "n", orUnknown(pf.tok_s, fmtRate)), el("td", "n", orUnknown(r.ttft_s, fmtSeconds)));
      body.append(tr);
    }
    $("fit-csv").disabled = !fitRows.length;
  } catch (err) {
    body.replaceChildren(el("tr"));
    body.firstChild.append(el("td", "", err.message));
  }
}

// ---- downloads ----------------------------------------------------------------------------------------
function csvCell(v) {
  const s = v === null || v === undefined ? "" : String(v);
  return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}
function download(name, rows) {
  const text = rows.map((r) => r.map(csvCell).join(",")).join("\n") + "\n";
  const a = el("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
}
function tablesCsv() {
  if (!last) return [];
  const d = last.prediction, x = last.explanation;
  const rows = [["section", "item", "value", "unit"]];
  for (const [k, v] of Object.entries(d.memory)) rows.push(["memory", k, v, k.endsWith("bytes") ? "B" : ""]);
  for (const [k, v] of Object.entries(d.decode)) rows.push(["decode", k, v, ""]);
  for (const [k, v] of Object.entries(d.prefill)) rows.push(["prefill", k, v, ""]);
  rows.push(["prediction", "ttft_s", d.ttft_s, "s"], ["prediction", "hypothetical", d.hypothetical, ""]);
  rows.push([], ["stage", "runs on", "data from", "bytes", "flop_per_byte", "bound", "seconds", "share"]);
  for (const s of x.stages) rows.push([s.label, s.unit, s.data_from, s.bytes, s.intensity, s.bound, s.seconds, s.share]);
  rows.push([], ["lever", "what if", "tok_s", "bytes_per_token", "speedup", "fits"]);
  for (const l of x.levers) rows.push([l.lever, l.what_if, l.tok_s, l.bytes_per_token, l.speedup, l.fits]);
  return rows;
}

// ---- start -----------------------------------------------------------------------------------------------
function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  $("theme").textContent = t === "dark" ? "◐ light" : "◐ dark";
  if (last) render(last);             // chart colours follow the theme
}

async function init() {
  const saved = localStorage.getItem("tokspeed-theme");
  applyTheme(saved || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  $("theme").addEventListener("click", () => {
    const t = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    localStorage.setItem("tokspeed-theme", t);
    applyTheme(t);
  });
  let presets = [];
  try {
    const [ms, hw, opts] = await Promise.all([getJSON("/api/models"), getJSON("/api/hardware"), getJSON("/api/options")]);
    for (const m of ms.models) { models[m.id] = m; $("model").append(option(m.id, modelLabel(m), m.id === "llama-3-8b")); }
    const groups = { gpu: "GPUs", soc: "Systems on chip", cpu: "CPUs", accelerator: "Accelerators" };
    for (const [kind, title] of Object.entries(groups)) {
      const g = el("optgroup"); g.label = title;
      for (const h of hw.hardware.filter((h) => h.kind === kind)) {
        hardware[h.id] = h;
        g.append(option(h.id, h.name, h.id === "rtx-4090"));
      }
      if (g.children.length) $("hardware").append(g);
    }
    $("hardware").append(option("custom", "Custom device…", false));
    for (const q of opts.quant) $("quant").append(option(q, q, q === "F16"));
    for (const k of opts.kv_dtype) $("kv_dtype").append(option(k, k, k === "f16"));
    for (const e of opts.engine) $("engine").append(option(e, e, e === "llama.cpp"));
    presets = opts.presets;
    for (const p of presets) $("preset").append(option(p.id, p.label, false));
  } catch (err) {
    showError("cannot load the catalogs: " + err.message);
    return;
  }
  loadHash();
  showHardware();
  showEngineBuild();
  fillCompareValues();
  fetch("/api/openapi.json").then((r) => r.json()).then((doc) => {
    if (doc.paths["/api/fit"]) { $("fit-panel").classList.remove("hidden"); $("nav-fit").classList.remove("hidden"); }
  }).catch(() => {});
  $("model-search").addEventListener("input", filterModels);
  $("preset").addEventListener("change", () => {
    const p = presets.find((x) => x.id === $("preset").value);
    if (!p) return;
    setField("gpus", "1"); setField("parallel", ""); setField("offload", "none"); setField("engine", "llama.cpp");
    setField("engine_version", ""); setField("flash_attn", "auto");
    for (const [k, v] of Object.entries(p.settings)) setField(k, v);
    showHardware();
    showEngineBuild();
    schedule();
  });
  $("form").addEventListener("input", (ev) => {        // typing: wait for a pause; a select answers on "change"
    if (!["upload", "model-search", "preset"].includes(ev.target.id) && ev.target.tagName !== "SELECT") schedule();
  });
  $("form").addEventListener("change", (ev) => {
    if (ev.target.id === "upload") { if (ev.target.files[0]) upload(ev.target.files[0]); return; }
    if (ev.target.id === "model-search" || ev.target.id === "preset") return;
    if (ev.target.id === "hardware") showHardware();
    if (ev.target.id === "engine") showEngineBuild();
    if (ev.target.tagName === "SELECT") { clearTimeout(timer); update(); } else schedule();    // a pick: at once
  });
  $("form").addEventListener("submit", (ev) => { ev.preventDefault(); update(); });
  for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", schedule);
  $("cmp-kind").addEventListener("change", fillCompareValues);
  $("cmp-add").addEventListener("click", () => { compareRows.push({ kind: $("cmp-kind").value, value: $("cmp-value").value }); refreshCompare(); });
  $("fit-run").addEventListener("click", runFit);
  $("fit-csv").addEventListener("click", () => download("tokspeed-fit.csv", [["model", "quant", "fits", "offload", "memory_bytes", "decode_tok_s", "prefill_tok_s", "ttft_s"],
    ...fitRows.map((r) => [r.model, r.quant, r.fits, typeof r.offload === "object" ? JSON.stringify(r.offload) : r.offload,
      (r.memory || {}).total_bytes, (r.decode || {}).tok_s, (r.prefill || {}).tok_s, r.ttft_s])]));
  $("dl-csv").addEventListener("click", () => download("tokspeed-tables.csv", tablesCsv()));
  let resizeTimer = null;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(() => last && render(last), 100); });
  update();
}

document.addEventListener("DOMContentLoaded", init);
