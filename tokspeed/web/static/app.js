// tokspeed web: the form drives /api/predict, /api/explain and /api/plot/*.svg; results update in place.
"use strict";

const $ = (id) => document.getElementById(id);
const FIELDS = ["model", "hardware", "quant", "kv_dtype", "engine", "context", "batch", "prompt", "gen"];
const CUSTOM = ["bandwidth_gbps", "memory_gb", "fp16_tflops"];
let hardware = {};
let seq = 0;            // only the latest request may write the page

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

function params() {
  const p = new URLSearchParams();
  for (const f of FIELDS) p.set(f, $(f).value.trim());
  if ($("hardware").value === "custom") for (const f of CUSTOM) p.set(f, $(f).value.trim());
  return p;
}
function explainMode() {
  return $("mode-prefill").checked ? "prefill" : "decode";
}
function explainParams(p) {
  // decode: the first generated token (context + prompt tokens cached); prefill: the prompt after the context
  const e = new URLSearchParams();
  for (const f of ["model", "hardware", "quant", "kv_dtype", "engine", "batch", ...CUSTOM]) if (p.has(f)) e.set(f, p.get(f));
  const ctx = parseInt(p.get("context")) || 0, prompt = parseInt(p.get("prompt")) || 0;
  if (explainMode() === "prefill" && prompt > 0) {
    e.set("context", String(ctx));
    e.set("prefill", String(prompt));
  } else {
    e.set("context", String(ctx + prompt));
  }
  return e;
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

function renderPrediction(d) {
  const dec = d.decode, m = d.memory, pf = d.prefill;
  setValue("out-tok-s", dec.tok_s, fmtRate(dec.tok_s));
  $("out-ms").textContent = dec.ms_per_token.toFixed(2) + " ms/token · " + dec.bound + "-bound · range " + fmtRate(dec.tok_s_low) + "–" + fmtRate(dec.tok_s_high);
  setValue("out-bound", dec.bound_tok_s, fmtRate(dec.bound_tok_s));
  const bw = d.hardware === "custom" ? parseFloat($("bandwidth_gbps").value) : (hardware[d.hardware] || {}).bandwidth_gbps;
  $("out-bound-how").textContent = bw ? bw + " GB/s ÷ " + fmtBytes(dec.bytes_per_token) + " per token" : "bandwidth ÷ bytes per token";
  setValue("out-bytes", dec.bytes_per_token, fmtBytes(dec.bytes_per_token));
  $("out-bytes-how").textContent = "weights " + fmtBytes(dec.weight_bytes_per_token) + " + KV " + fmtBytes(dec.kv_bytes_per_token);
  if (d.prompt > 0) {
    setValue("out-prefill", pf.tok_s, fmtRate(pf.tok_s));
    $("out-ttft").textContent = "first token after " + fmtSeconds(d.ttft_s) + " · " + pf.bound + "-bound";
  } else {
    setValue("out-prefill", 0, "–");
    $("out-ttft").textContent = "no prompt";
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
  $("memcap").style.left = (100 * m.capacity_bytes / scale).toFixed(3) + "%";
  $("memcap").title = "capacity " + fmtBytes(m.capacity_bytes);
  $("source").textContent = "engine model: " + d.engine_source;
}

const PHASES = { cpu: "CPU", embedding: "GPU · embedding", layer: "GPU · every layer", head: "GPU · head" };

function renderExplain(x) {
  const what = x.mode === "prefill"
    ? "A prefill of " + x.tokens.toLocaleString("en-US") + " tokens after " + x.context.toLocaleString("en-US") + " cached"
    : "One decode token at context " + x.context.toLocaleString("en-US");
  $("journey-head").textContent = what + " on " + x.hardware + " (" + x.engine + "): " + fmtSeconds(x.total_s) + " = " +
    fmtRate(x.tok_s / x.batch) + " tok/s. The stages below sum to it." +
    (x.mode === "prefill" ? " Matmuls now reuse each weight for many tokens: compute-bound." : "");
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
    bar.style.width = Math.max(s.share * 140, 0).toFixed(1) + "px";
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
  $("journey-foot").textContent = "Ridge point " + x.ridge_flops_per_byte.toFixed(0) + " FLOP/byte (" + x.matmul_tflops + " TFLOPS ÷ " +
    x.bandwidth_gbps + " GB/s): stages far below it wait on memory. " + x.kernels.toLocaleString("en-US") + " kernel launches per token.";
  const lv = $("levers").tBodies[0];
  lv.replaceChildren();
  const now = el("tr", "now");
  now.append(el("td", "", "now"), el("td", "", "as set on the left"), el("td", "n", fmtRate(x.tok_s / x.batch)),
    el("td", "n", fmtBytes(x.prediction.decode.bytes_per_token)), el("td", "n", "1.00×"),
    el("td", "", x.prediction.memory.fits ? "yes" : "no"));
  lv.append(now);
  for (const l of x.levers) {
    const tr = el("tr");
    tr.append(el("td", "", l.lever), el("td", "", l.what_if), el("td", "n", fmtRate(l.tok_s)), el("td", "n", fmtBytes(l.bytes_per_token)),
      el("td", "n " + (l.speedup >= 1 ? "up" : "down"), l.speedup.toFixed(2) + "×"), el("td", "", l.fits ? "yes" : "no"));
    lv.append(tr);
  }
}

function saveHash(p) {
  const h = new URLSearchParams(p);
  if (h.get("model").startsWith("upload:")) h.delete("model");     // uploads do not outlive the server
  if (explainMode() === "prefill") h.set("explain", "prefill");
  history.replaceState(null, "", "#" + h);
}
function loadHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  for (const f of [...FIELDS, ...CUSTOM]) {
    const v = h.get(f);
    if (v === null) continue;
    const e = $(f);
    if (e.tagName === "SELECT" && ![...e.options].some((o) => o.value === v)) continue;
    e.value = v;
  }
  if (h.get("explain") === "prefill") $("mode-prefill").checked = true;
}

async function update() {
  const my = ++seq;
  const p = params();
  saveHash(p);
  const e = explainParams(p);
  document.body.classList.add("busy");
  try {
    const [pred, expl] = await Promise.all([getJSON("/api/predict?" + p), getJSON("/api/explain?" + e)]);
    if (my !== seq) return;
    showError("");
    renderPrediction(pred);
    renderExplain(expl);
    setChart("chart-overview", "/api/plot/overview.svg?" + p);
    setChart("chart-stages", "/api/plot/stages.svg?" + e);
    setChart("chart-context", "/api/plot/context.svg?" + p);
    document.body.dataset.updated = String(my);
  } catch (err) {
    if (my === seq) showError(err.message);
  } finally {
    if (my === seq) document.body.classList.remove("busy");
  }
}

function setChart(id, url) {
  const img = $(id);
  if (img.getAttribute("src") === url) return;
  img.classList.add("loading");          // dimmed until the new chart has arrived
  img.src = url;
}

let timer = null;
function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 250);
}

function showHardware() {
  const v = $("hardware").value;
  $("custom").classList.toggle("hidden", v !== "custom");
  const h = hardware[v];
  $("hw-info").textContent = h ? h.memory_gb + " GB · " + h.bandwidth_gbps + " GB/s" + (h.fp16_tflops ? " · " + h.fp16_tflops + " TFLOPS FP16" : "") : "";
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

async function init() {
  try {
    const [models, hw, opts] = await Promise.all([getJSON("/api/models"), getJSON("/api/hardware"), getJSON("/api/options")]);
    for (const m of models.models) $("model").append(option(m.id, m.name + " · " + m.params_b.toFixed(2) + " B", m.id === "llama-3-8b"));
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
  } catch (err) {
    showError("cannot load the catalogs: " + err.message);
    return;
  }
  loadHash();
  for (const img of document.querySelectorAll(".charts img")) {
    img.addEventListener("load", () => img.classList.remove("loading"));
    img.addEventListener("error", () => img.classList.remove("loading"));
  }
  showHardware();
  $("form").addEventListener("input", (ev) => { if (ev.target.id !== "upload") schedule(); });
  $("form").addEventListener("change", (ev) => {
    if (ev.target.id === "upload") { if (ev.target.files[0]) upload(ev.target.files[0]); return; }
    if (ev.target.id === "hardware") showHardware();
    schedule();
  });
  $("form").addEventListener("submit", (ev) => { ev.preventDefault(); update(); });
  for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", schedule);
  update();
}

document.addEventListener("DOMContentLoaded", init);
