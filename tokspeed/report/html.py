"""`tokspeed report -o FILE.html`: one self-contained HTML file — prediction, charts (inline SVG) and the
journey of one token with its levers. No scripts, no fonts, no network: it opens anywhere, offline."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from .. import __version__
from ..advise.alternatives import ways_to_run
from ..explain import explain
from ..guard.escape import html as esc
from ..plots import context_figure, prediction_figure, stages_figure, to_svg
from ..plots.verbs import hw_info, prediction_journeys
from ..predict import predict
from ..units import fmt_bytes, fmt_rate, fmt_seconds
from ..workload import DEFAULT_ENGINE, DEFAULT_GEN, DEFAULT_PROMPT, engine_build
from .explain_table import fmt_flops, headline
from .serving_section import serving_section
from .text import ttft_how, unknown

SWEEP_CONTEXTS = (1024, 4096, 16384, 32768, 65536, 131072)   # the seeds' table

CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2733;background:#f5f7fa;margin:0}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:2px solid #dde3ea;padding-bottom:4px}
.sub{color:#5b6b7c}.cards{display:grid;grid-template-columns:repeat(var(--n),minmax(0,1fr));gap:12px;margin:18px 0}
@media(max-width:900px){.cards{grid-template-columns:repeat(calc(var(--n)/2),minmax(0,1fr))}}
@media(max-width:520px){.cards{grid-template-columns:repeat(2,minmax(0,1fr))}main{padding:14px}h1{font-size:21px}
.card{padding:10px 12px}.card .v{font-size:18px}}.card .v{white-space:nowrap}
.card{background:#fff;border-radius:10px;padding:12px 16px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.card .v{font-size:24px;font-weight:650}.card .k{color:#5b6b7c;font-size:13px}
table{border-collapse:collapse;width:100%;background:#fff;border-radius:8px;overflow:hidden;font-size:13.5px;
box-shadow:0 1px 3px rgba(0,0,0,.08)}th,td{padding:6px 9px;text-align:left;border-bottom:1px solid #edf0f3}
th{background:#eef2f6;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.phase td{background:#f8fafc;color:#5b6b7c;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.memory{color:#1f7a70;font-weight:600}.compute{color:#a8326a;font-weight:600}.cpu{color:#a07800;font-weight:600}
.bar{display:inline-block;height:9px;background:#3b6fb6;border-radius:2px;vertical-align:middle}
.up{color:#1f7a3a;font-weight:600}.down{color:#b3261e;font-weight:600}
figure{margin:16px 0;background:#fff;border-radius:10px;padding:8px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
figure svg{width:100%;max-width:900px;height:auto;display:block;margin:0 auto}td.s{white-space:nowrap}figcaption{color:#5b6b7c;font-size:13px;padding:4px 8px}
.note{color:#5b6b7c;font-size:13px}footer{margin-top:36px;color:#7a8896;font-size:12px;overflow-wrap:anywhere}
.nofit{background:#fdecea;border-left:5px solid #b3261e;border-radius:8px;padding:12px 16px;margin:18px 0}
.nofit h2{margin:0 0 6px;border:0;color:#b3261e;font-size:20px}.nofit ul{margin:6px 0 0;padding-left:20px}
.card.hyp .v{color:#7a8896}.card.hyp .k.h{color:#b3261e;font-weight:600}
ol.cite{font-size:12.5px;color:#3d4a57;padding-left:22px;overflow-wrap:anywhere}ol.cite b{color:#1d2733}
tr.now td{color:#5b6b7c;font-style:italic}.tw{overflow-x:auto;border-radius:8px}
"""

PHASE_TITLE = {"cpu": "CPU", "embedding": "GPU · embedding", "layer": "GPU · every layer", "head": "GPU · head"}


def _cards(pred) -> str:
    """The headline figures. A setup that does not fit gets its speeds greyed and labelled hypothetical;
    a figure the device lacks (no FLOP/s: prefill, TTFT) reads "unknown", never 0."""
    d, m, p = pred.decode, pred.memory, pred.prefill
    hyp = not m.fits
    cards = [("decode, expected", f"{fmt_rate(d.tok_s)} tok/s", f"{d.ms_per_token:.2f} ms/token · {d.bound}-bound", hyp),
             ("decode bound", f"{fmt_rate(d.bound_tok_s)} tok/s", f"{pred.hw.bandwidth_gbps:g} GB/s ÷ bytes per token",
              hyp),
             ("bytes read per token", fmt_bytes(d.bytes_per_token),
              f"weights {fmt_bytes(d.weight_bytes_per_token)} + KV {fmt_bytes(d.kv_bytes_per_token)}", False),
             ("memory", f"{fmt_bytes(m.total_bytes)}",
              f"of {fmt_bytes(m.capacity_bytes)} · {'fits' if m.fits else 'does NOT fit'}", False)]
    if pred.prompt:
        cards.append(("prefill", unknown(p.tok_s, lambda v: f"{fmt_rate(v)} tok/s"),
                      f"{pred.prompt} tokens · {p.bound}" + ("-bound" if p.tok_s is not None else ""), hyp))
        cards.append(("time to first token", unknown(pred.ttft_s, fmt_seconds),
                      ttft_how(pred), hyp))
    out = []
    for k, v, h, hy in cards:
        label = '<div class="k h">hypothetical: does not fit</div>' if hy else ""
        out.append(f'<div class="card{" hyp" if hy else ""}"><div class="k">{esc(k)}</div><div class="v">{esc(v)}</div>'
                   f'<div class="k">{esc(h)}</div>{label}</div>')
    # one row of all the cards on a wide page, two even rows below 900 px, pairs on a phone: never 5 + 1
    return f'<div class="cards" style="--n:{len(out)}">' + "".join(out) + "</div>"


def _nofit(pred, ways) -> str:
    """The headline of a setup that does not fit: by how much, and each way to run it with its figure."""
    m = pred.memory
    items = "".join(f"<li><b>{esc(w['kind'])}</b>: {esc(w['description'])}</li>" for w in ways) or \
        "<li>no way tried fits (offload, more devices, a smaller format, a shorter context): a device with more memory</li>"
    return (f'<div class="nofit"><h2>Does not fit: needs {esc(fmt_bytes(m.total_bytes))} of '
            f"{esc(fmt_bytes(m.capacity_bytes))}</h2>The speeds below are hypothetical (as if it fitted). "
            f"Ways to run it, each predicted:<ul>{items}</ul></div>")


def split_citations(text: str) -> list[str]:
    """A source string's citations: split at '; ' outside parentheses and brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == ";" and depth <= 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return [c for c in out if c]


def citations(hw, pred) -> str:
    def fmt(c: str) -> str:
        m = re.match(r"^\[([A-Z0-9_-]+)\]\s*(.*)$", c, re.S)
        return f"<b>[{esc(m.group(1))}]</b> {esc(m.group(2))}" if m else esc(c)

    hw_items = "".join(f"<li>{fmt(c)}</li>" for c in split_citations(hw.source or "")) or "<li>no source given</li>"
    return (f"<h2>Sources</h2><p class='note'>{esc(hw.name)}: the vendor figures above come from</p>"
            f"<ol class='cite'>{hw_items}</ol><p class='note'>Engine model ({esc(pred.engine)}): "
            f"{esc(pred.engine_source)}</p>")


def _prediction_table(pred) -> str:
    m, d = pred.memory, pred.decode
    rows = [("weights", fmt_bytes(m.weights_bytes)), ("KV cache", fmt_bytes(m.kv_bytes)),
            ("activations / workspace", fmt_bytes(m.activations_bytes)), ("engine runtime", fmt_bytes(m.overhead_bytes)),
            *([("token embedding in host RAM", fmt_bytes(m.host_bytes))] if getattr(m, "host_bytes", 0) else []),
            ("total / capacity", f"{fmt_bytes(m.total_bytes)} / {fmt_bytes(m.capacity_bytes)}"),
            ("largest context at this batch", f"{m.max_context:,} tokens" if m.max_context else
             "none: the weights and buffers alone exceed the capacity"),
            ("largest batch at this context", f"{m.max_batch:,}" if m.max_batch else "none (does not fit)"),
            ("decode range", f"{fmt_rate(d.tok_s_low)} – {fmt_rate(d.tok_s_high)} tok/s")]
    return "<table><tr><th>quantity</th><th>value</th></tr>" + "".join(
        f'<tr><td>{esc(k)}</td><td class="n">{esc(v)}</td></tr>' for k, v in rows) + "</table>"


def journey_table(expl) -> str:
    j = expl.journey
    measured = any(s.measured_s is not None for s in j.stages)
    head = ["#", "stage", "runs on", "data from", "bytes", "FLOPs", "FLOP/B", "bound", "time", "share"]
    if measured:
        head.append("measured")
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    phase = None
    for i, s in enumerate(j.stages, 1):
        if s.phase != phase:
            phase = s.phase
            extra = f" (× {s.layers} layers)" if phase == "layer" else ""
            out.append(f'<tr class="phase"><td colspan="{len(head)}">{esc(PHASE_TITLE[phase] + extra)}</td></tr>')
        cells = [str(i), esc(s.label) + (f'<div class="note">{esc(s.note)}</div>' if s.note else ""), esc(s.unit),
                 esc(s.data_from), fmt_bytes(s.bytes) if s.bytes else "", fmt_flops(s.flops) if s.flops else "",
                 f"{s.intensity:.1f}" if s.bytes else "", f'<span class="{s.bound}">{esc(s.bound)}</span>',
                 fmt_seconds(s.seconds),
                 f'<span class="bar" style="width:{max(s.share * 120, 0):.1f}px"></span> {s.share:.1%}']
        if measured:
            cells.append(fmt_seconds(s.measured_s) if s.measured_s is not None else "")
        num = {0, 4, 5, 6, 8}
        out.append("<tr>" + "".join(f'<td class="n">{c}</td>' if k in num else f'<td class="s">{c}</td>' if k == 9
                                    else f"<td>{c}</td>"
                                    for k, c in enumerate(cells)) + "</tr>")
    out.append(f'<tr><td></td><td><b>total</b></td><td colspan="6"></td><td class="n"><b>{fmt_seconds(j.total_s)}'
               f'</b></td><td>100%</td>{"<td></td>" if measured else ""}</tr></table>')
    return "".join(out)


def levers_table(expl) -> str:
    p, j = expl.prediction, expl.journey
    out = ["<table><tr><th>lever</th><th>what if</th><th>tok/s</th><th>time/token</th><th>bytes/token</th>"
           "<th>speed-up</th><th>fits</th></tr>"]
    rate = j.tok_s / j.batch if j.predicted_s is not None and j.tok_s else None
    out.append(f"<tr class='now'><td>now</td><td>as above</td><td class='n'>{unknown(rate, fmt_rate)}</td>"
               f"<td class='n'>{unknown(1 / rate if rate else None, fmt_seconds)}</td>"
               f"<td class='n'>{fmt_bytes(p.decode.bytes_per_token)}</td><td class='n'>1.00×</td>"
               f"<td>{'yes' if p.memory.fits else 'no'}</td></tr>")
    for lv in expl.levers:
        known = lv.tok_s is not None and lv.speedup
        cls = "up" if known and lv.speedup >= 1 else "down"
        out.append(f"<tr><td>{esc(lv.lever)}</td><td>{esc(lv.what_if)}</td><td class='n'>{unknown(lv.tok_s, fmt_rate)}</td>"
                   f"<td class='n'>{fmt_seconds(lv.ms_per_token / 1e3) if known else 'unknown'}</td>"
                   f"<td class='n'>{fmt_bytes(lv.bytes_per_token)}</td>"
                   f"<td class='n {cls if known else ''}'>{f'{lv.speedup:.2f}×' if known else 'unknown'}</td>"
                   f"<td>{'yes' if lv.fits else 'no'}</td></tr>")
    return "".join(out) + "</table>"


def _first_token_note(pred) -> str:
    """Why the journey's context and speed differ from the cards': it is the first generated token."""
    return (f"This is the first generated token: its cache holds the {pred.context:,} tokens of context and the "
            f"{pred.prompt:,} of the prompt ({pred.context + pred.prompt:,}). The decode card averages all "
            f"{pred.gen:,} generated tokens as the cache grows, so it can read slightly slower.")


def _ridge(expl) -> str:
    hw, j = expl.prediction.hw, expl.journey
    if not hw.matmul_flops:
        return (f"Ridge point: unknown ({hw.name} has no published FLOP/s figure; decode is memory-bound whatever "
                f"it is). {j.kernels:,} kernel launches per token.")
    return (f"Ridge point: {j.ridge_flops_per_byte:.0f} FLOP/byte ({hw.matmul_flops / 1e12:g} TFLOPS ÷ "
            f"{hw.bandwidth_gbps:g} GB/s); {j.kernels:,} kernel launches per token.")


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


def _engine_label(pred) -> str:
    """The engine's era and attention in brackets, e.g. " (era 2025, FlashAttention on)"; "" for an engine with
    neither."""
    bits = [f"era {pred.engine_version}"] if pred.engine_version else []
    if pred.flash_attention is not None:
        bits.append(f"FlashAttention {'on' if pred.flash_attention else 'off'}")
    return f" ({', '.join(bits)})" if bits else ""


def render_report(model, hardware, quant=None, kv_dtype="f16", engine=DEFAULT_ENGINE, prompt=DEFAULT_PROMPT, gen=DEFAULT_GEN, context=0,
                  batch=1, charts: bool = True, engine_version: str | None = None,
                  flash_attention: bool | None = None, gpus: int = 1) -> str:
    """The report's HTML; with ``gpus`` > 1 it adds the serving section (layouts, frontier) of ``serve``."""
    build = engine_build(engine_version, flash_attention)     # kept by every prediction below
    pred = predict(model, hardware, quant=quant, kv_dtype=kv_dtype, engine=engine, prompt=prompt, gen=gen,
                   context=context, batch=batch, **build)
    hw = pred.hw
    expl = explain(model, hw, context=context + prompt, batch=batch,
                   quant=quant, kv_dtype=kv_dtype, engine=engine, **build)
    parts = [f"<h1>{esc(pred.model)} on {esc(hw.name)}</h1>",
             f'<div class="sub">{esc(pred.quant)} weights · KV {esc(pred.kv_dtype)} · engine {esc(pred.engine)}'
             f"{esc(_engine_label(pred))} · "
             f"batch {pred.batch} · context {pred.context:,} + prompt {pred.prompt:,} + generate {pred.gen:,}</div>",
             _cards(pred)]
    if not pred.memory.fits:
        parts.insert(2, _nofit(pred, ways_to_run(model, hw, quant=quant, kv_dtype=kv_dtype, engine=engine,
                                                 prompt=prompt, gen=gen, context=context, batch=batch, **build)))
    if charts:
        parts.append(_figure(to_svg(prediction_figure(pred.to_dict(), hw_info(hw), prediction_journeys(pred))),
                             "Memory against capacity; every stage of a decode step (rings) and of the prefill "
                             "(squares) on the roofline: left of the ridge is memory-bound."))
    parts += ["<h2>Prediction</h2>", _prediction_table(pred)]
    parts += ["<h2>The journey of one token</h2>",
              f"<p>{'<b>Hypothetical (it does not fit):</b> ' if not expl.prediction.memory.fits else ''}"
              f"{esc(headline(expl, fit_prefix=False))}. The stages sum to the predicted time. {esc(_ridge(expl))} "
              f"{esc(_first_token_note(pred))}</p>",
              journey_table(expl)]
    if charts:
        parts.append(_figure(to_svg(stages_figure(expl.to_dict())), "Time per stage of one decode token."))
    parts += ["<h2>What if … (the four levers)</h2>", levers_table(expl)]
    if charts:
        rows = [predict(model, hw, quant=quant, kv_dtype=kv_dtype, engine=engine, prompt=0, gen=1, context=c,
                        batch=batch, **build).to_dict() for c in SWEEP_CONTEXTS]
        parts += ["<h2>Decode speed against context</h2>",
                  _figure(to_svg(context_figure(rows, chosen=pred.to_dict())),
                          "The KV cache grows with context; at long context it rivals the weights and speed falls. "
                          "The star is this setup; hollow red points do not fit (hypothetical).")]
    if gpus > 1:
        parts.append(serving_section(model, hw, gpus, quant=quant, kv_dtype=kv_dtype, engine=engine, isl=prompt,
                                     osl=gen, engine_version=engine_version, charts=charts))
    parts.append(citations(hw, pred))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(f"<footer>tokspeed {esc(__version__)} · {esc(stamp)} · every figure is computed by tokspeed from "
                 f"the sources above; see docs/explain.md for the formulas</footer>")
    # a wide table scrolls inside its own box; the page never scrolls sideways
    body = "".join(parts).replace("<table>", '<div class="tw"><table>').replace("</table>", "</table></div>")
    title = f"tokspeed · {pred.model} on {hw.name}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}</style></head>'
            f"<body><main>{body}</main></body></html>\n")
