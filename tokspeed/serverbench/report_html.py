"""``report.html``: one self-contained page a person reads (inline SVG and CSS, no script, no network).

Sections: what was run (server, engine version, prompts and whether their length was verified);
a table per load level; output throughput vs load with tokspeed's prediction for the same model and
hardware over it (from the serving model: batch c decodes c sequences per step; a rate phase is
``tokspeed.serving.curve.continuous_batching``) and the gap stated; latency percentiles vs load with
the SLO lines; goodput vs load; TTFT and inter-token-gap distributions (empirical CDFs per level);
failed requests by kind over time. Every text from the server or the user is HTML-escaped.
"""

from __future__ import annotations

from pathlib import Path

from ..guard.escape import html as escape
from ..guard.outputs import write_in
from .svg import line_chart, stacked_bars

CSS = """body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1300px;
color:#222;padding:0 16px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.grid{display:flex;flex-wrap:wrap;gap:14px}
.note{color:#555}.warn{color:#a40}.ttl{font-size:14px;font-weight:600}.tick{font-size:11px;fill:#444}
.leg{font-size:11.5px}.ax{font-size:12px;fill:#333}.lim{font-size:11px}svg{background:#fff;border:1px solid #eee}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0}dt{color:#666}dd{margin:0}"""


def write_report(directory, summary: dict, records: list[dict]) -> Path:
    """report.html through ``guard.outputs`` (a ``RunDir`` or a path; the writer masks secrets)."""
    return write_in(directory, "report.html", render(summary, records))


def _g(ph: dict, metric: str, q: str):
    return ((ph.get("stats") or {}).get(metric) or {}).get(q)


def _n(v, digits=3, scale=1.0) -> str:
    if v is None:
        return "–"
    v = v * scale
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.{digits}g}"


def load_axis(summary: dict) -> tuple[str, list[dict]]:
    """('concurrency' or 'rate_rps', the load phases in load order; a throughput phase stays apart)."""
    phases = [p for p in summary.get("phases", []) if p.get("phase") != "throughput"]
    kind = phases[0].get("load_kind", "concurrency") if phases else "concurrency"
    return kind, sorted(phases, key=lambda p: p.get("load") or 0)


def render(summary: dict, records: list[dict]) -> str:
    run = summary.get("run", {})
    kind, phases = load_axis(summary)
    xlabel = "requests in flight (concurrency)" if kind == "concurrency" else "arrival rate (requests/s)"
    logx = kind == "concurrency" and len(phases) > 2
    slo = run.get("slo") or {}
    body = [f"<h1>bench-server: {escape(str(run.get('model')))} @ {escape(str(run.get('url')))}</h1>",
            _facts(summary), _table(summary)]
    charts = [_throughput(summary, phases, xlabel, logx), _latency(phases, xlabel, logx, slo, "ttft_s", "TTFT", 1e3, "ms"),
              _latency(phases, xlabel, logx, slo, "tpot_s", "TPOT", 1e3, "ms"),
              _latency(phases, xlabel, logx, slo, "e2e_s", "end-to-end latency", 1.0, "s"),
              _goodput(phases, xlabel, logx, slo)]
    body.append("<h2>Load</h2><div class='grid'>" + "".join(charts) + "</div>")
    body.append(_gap_text(summary))
    body.append("<h2>Distributions</h2><div class='grid'>" + _cdf(summary, records, "ttft_s", "TTFT", 1e3)
                + _cdf(summary, records, "itl_s", "inter-token gap", 1e3) + "</div>")
    body.append("<h2>Failures</h2><div class='grid'>" + _errors_over_time(records) + "</div>")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>bench-server report</title>"
            f"<style>{CSS}</style></head><body>" + "".join(body) + "</body></html>\n")


def _facts(summary: dict) -> str:
    run = summary.get("run", {})
    server = summary.get("server") or {}
    rows = [("API", run.get("api")), ("engine (as the server says)",
                                      ", ".join(f"{k} {v}" for k, v in server.items()) if server else "not reported"),
            ("requests", f"{summary.get('ok')} ok, {summary.get('failed')} failed, {summary.get('cancelled')} cancelled"),
            ("prompt", run.get("prompts_file") or f"synthetic, {run.get('prompt_tokens')} tokens"
             + (f" + shared prefix {run['shared_prefix_tokens']}" if run.get("shared_prefix_tokens") else "")),
            ("prompt length", {"server": "verified: counted by the server",
                               "tokenizer": "counted here with the model's tokenizer (not by the server)",
                               "unverified": "UNVERIFIED: the server reported no count and no --tokenizer was given"}
             .get(summary.get("prompt_tokens_verified"), "–")),
            ("output", f"max {run.get('max_tokens')} tokens"), ("SLOs", _slo_text(run.get("slo")))]
    sat = summary.get("saturation")
    if sat:
        load = f"concurrency {sat['concurrency']}" if "concurrency" in sat else f"{sat.get('rate_rps')} requests/s"
        rows.append(("saturation", f"{load}: {_n(sat.get('output_tok_s'))} output tok/s, limit: {sat.get('limit')}"))
    if summary.get("aborted"):
        rows.append(("ABORTED", summary["aborted"]))
    if summary.get("hint"):
        rows.append(("note", summary["hint"]))
    return "<dl>" + "".join(f"<dt>{escape(str(k))}</dt><dd>{escape(str(v))}</dd>" for k, v in rows) + "</dl>"


def _slo_text(slo) -> str:
    if not slo:
        return "none given"
    parts = []
    if slo.get("ttft_s") is not None:
        parts.append(f"TTFT ≤ {slo['ttft_s'] * 1e3:g} ms")
    if slo.get("tpot_s") is not None:
        parts.append(f"TPOT ≤ {slo['tpot_s'] * 1e3:g} ms")
    if slo.get("e2e_s") is not None:
        parts.append(f"e2e ≤ {slo['e2e_s']:g} s")
    return ", ".join(parts) + f" at p{slo.get('percentile', 90):g}"


def _table(summary: dict) -> str:
    cols = ("phase", "ok", "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "e2e p50 s",
            "output tok/s", "tok/s per user", "goodput req/s", "SLO share", "client CPU")
    rows = []
    for ph in summary.get("phases", []):
        slo = ph.get("slo") or {}
        share = slo.get("share_all")
        cpu = ph.get("client_cpu_share")
        rows.append([ph.get("phase"), f"{ph.get('ok')}/{ph.get('requests')}", _n(_g(ph, "ttft_s", "p50"), scale=1e3),
                     _n(_g(ph, "ttft_s", "p90"), scale=1e3), _n(_g(ph, "ttft_s", "p99"), scale=1e3),
                     _n(_g(ph, "tpot_s", "p50"), scale=1e3), _n(_g(ph, "tpot_s", "p99"), scale=1e3),
                     _n(_g(ph, "e2e_s", "p50")), _n(ph.get("output_tok_s")), _n(ph.get("per_user_decode_tok_s")),
                     _n(ph.get("goodput_rps")), "–" if share is None else f"{share:.0%}",
                     "–" if cpu is None else f"{cpu:.0%}"])
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<h2>Per load level</h2><table><tr>{head}</tr>{body}</table>"


def _pred_by_phase(summary: dict) -> dict:
    return {r["phase"]: r for r in (summary.get("prediction") or {}).get("phases", [])}


def _predicted_output(row: dict):
    """The level's predicted output tok/s: the scheduler simulation with the run's lengths, else the batch curve."""
    sim = row.get("simulated_output_tok_s")
    return sim if sim is not None else row.get("predicted_output_tok_s")


def _throughput(summary, phases, xlabel, logx) -> str:
    series = [{"name": "measured", "points": [(p.get("load"), p.get("output_tok_s")) for p in phases]}]
    pred = _pred_by_phase(summary)
    if pred:
        pts = [(p.get("load"), _predicted_output(pred.get(p.get("phase")) or {})) for p in phases]
        series.append({"name": "tokspeed prediction", "points": pts, "dash": True, "color": "#555"})
    sat = summary.get("saturation")
    vlines = [(sat.get("concurrency", sat.get("rate_rps")), f"saturation ({sat.get('limit')})")] if sat else None
    return line_chart("output throughput vs load", series, xlabel, "output tokens/s", logx=logx, vlines=vlines)


def _latency(phases, xlabel, logx, slo, metric, name, scale, unit) -> str:
    series = []
    for q in ("p50", "p90", "p99"):
        pts = [(p.get("load"), None if _g(p, metric, q) is None else _g(p, metric, q) * scale) for p in phases]
        series.append({"name": q, "points": pts})
    hl = [(slo[metric] * scale, f"SLO {slo[metric] * scale:g} {unit} (p{slo.get('percentile', 90):g})")] \
        if slo.get(metric) is not None else None
    return line_chart(f"{name} percentiles vs load", series, xlabel, f"{name} ({unit})", hlines=hl, logx=logx)


def _goodput(phases, xlabel, logx, slo) -> str:
    series = [{"name": "goodput", "points": [(p.get("load"), p.get("goodput_rps")) for p in phases]},
              {"name": "completed", "points": [(p.get("load"), p.get("request_rps")) for p in phases], "dash": True}]
    title = "goodput vs load" + ("" if slo else " (no SLO given: all successes)")
    return line_chart(title, series, xlabel, "requests/s", logx=logx)


def _gap_text(summary: dict) -> str:
    pred = summary.get("prediction") or {}
    rows = pred.get("phases") or []
    if not rows:
        why = summary.get("prediction_error") or "no --hardware given"
        return f"<p class='note'>No tokspeed prediction: {escape(str(why))}.</p>"
    parts = []
    for r in rows:
        m, p = r.get("measured_output_tok_s"), _predicted_output(r)
        if m and p:
            parts.append(f"{escape(str(r['phase']))}: measured {m:,.0f} vs predicted {p:,.0f} output tok/s "
                         f"(measured/predicted {m / p:.2f})")
    head = (f"<p class='note'>Prediction: tokspeed's serving model for {escape(str(pred.get('model')))} "
            f"({escape(str(pred.get('quant')))}, {escape(str(pred.get('engine')))}) on {escape(str(pred.get('hardware')))}. "
            "Gap, level by level: ")
    warn = sorted({r["note"] for r in rows if r.get("note")})
    tail = "".join(f"<p class='warn'>{escape(w)}</p>" for w in warn)
    return head + "; ".join(parts) + ".</p>" + tail


def _cdf(summary, records, metric, name, scale) -> str:
    by_phase: dict[str, list[float]] = {}
    for r in records:
        if r.get("warmup") or not r.get("ok"):
            continue
        vals = r.get(metric)
        vals = vals if isinstance(vals, list) else [vals]
        by_phase.setdefault(str(r.get("phase")), []).extend(v * scale for v in vals if v is not None)
    series = []
    for ph in summary.get("phases", []):
        xs = sorted(by_phase.get(str(ph.get("phase")), []))
        if not xs:
            continue
        step = max(1, len(xs) // 200)  # at most ~200 points a line
        pts = [(x, (i + 1) / len(xs)) for i, x in enumerate(xs)][::step] + [(xs[-1], 1.0)]
        series.append({"name": str(ph.get("phase")), "points": pts, "marker": False})
    return line_chart(f"{name} distribution (CDF per level)", series, f"{name} (ms)", "share of values ≤ x")


def _errors_over_time(records) -> str:
    failed = [r for r in records if not r.get("ok") and r.get("error") not in (None, "cancelled")]
    if not failed:
        return stacked_bars("failed requests by kind over time", [], {}, "", "")
    ends = [r.get("end_s") or 0 for r in records]
    span = max(ends) or 1.0
    n = 30
    width = span / n
    stacks: dict[str, list[int]] = {}
    for r in failed:
        i = min(int((r.get("end_s") or 0) / width), n - 1)
        stacks.setdefault(str(r.get("error")), [0] * n)[i] += 1
    return stacked_bars("failed requests by kind over time", [i * width for i in range(n)], stacks,
                        "time since the run started (s)", "failed requests")
