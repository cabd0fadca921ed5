// tokspeed web: the serving panel. On request (a search is about a second of server CPU) it asks /api/serve for
// the form's model, device, format, engine and GPU count with the panel's ISL, OSL and SLOs, then lists the best
// configuration of each layout and draws the throughput–interactivity frontier (Charts.frontier).
"use strict";

function layoutText(l) {
  const d = l.disagg;
  if (d) return `disagg ${d.prefill_workers}xTP${d.prefill_tp} prefill + ${d.decode_workers}xTP${d.decode_tp} decode`;
  const parts = ["TP" + l.tp];
  if (l.pp > 1) parts.push("PP" + l.pp);
  if (l.ep > 1) parts.push("EP" + l.ep);
  if (l.dp > 1) parts.push("attn-DP" + l.dp);
  return parts.join("x") + (l.replicas > 1 ? ` x ${l.replicas} replicas` : "");
}

function servingCell(v, digits) {
  return v === null || v === undefined ? "-" : Number(v).toLocaleString("en-US", { maximumFractionDigits: digits });
}

async function runServe() {
  const body = document.getElementById("serve").tBodies[0];
  const cell = (text, cls) => { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; };
  body.replaceChildren(document.createElement("tr"));
  body.firstChild.append(cell("searching …", "hint"));
  const q = new URLSearchParams({ model: document.getElementById("model").value, hardware: document.getElementById("hardware").value,
    gpus: document.getElementById("gpus").value || "1", engine: document.getElementById("engine").value,
    kv_dtype: document.getElementById("kv_dtype").value });
  for (const id of ["quant", "serve-isl", "serve-osl", "serve-ttft", "serve-tpot"]) {
    const v = document.getElementById(id).value.trim();
    if (v) q.set({ "serve-isl": "isl", "serve-osl": "osl", "serve-ttft": "slo_ttft_ms", "serve-tpot": "slo_tpot_ms" }[id] || id, v);
  }
  try {
    const r = await fetch("/api/serve?" + q);
    const doc = await r.json();
    if (!r.ok) throw new Error(doc.error || r.statusText);
    body.replaceChildren();
    for (const c of doc.configs) {
      const tr = document.createElement("tr");
      if (c.meets_slo === false) tr.className = "dim";
      tr.append(cell(layoutText(c.layout)), cell(servingCell(c.concurrency, 0), "n"), cell(servingCell(c.output_tok_s_per_gpu, 0), "n"),
        cell(servingCell(c.tok_s_per_user, 1), "n"), cell(servingCell(c.ttft_ms.p50, 0), "n"), cell(servingCell(c.tpot_ms.p50, 1), "n"),
        cell(c.meets_slo === null ? "" : c.meets_slo ? "yes" : "no"));
      body.append(tr);
    }
    Charts.frontier(document.getElementById("chart-frontier"), doc);
  } catch (err) {
    body.replaceChildren(document.createElement("tr"));
    body.firstChild.append(cell(err.message));
  }
}

document.addEventListener("DOMContentLoaded", () => document.getElementById("serve-run").addEventListener("click", runServe));
