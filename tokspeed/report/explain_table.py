"""The rich tables `tokspeed explain` prints: the journey of one token, then the levers."""

from __future__ import annotations

from ..engines.bands import describe, prediction_basis
from ..engines.rates import int8_rates
from ..units import fmt_bytes, fmt_rate, fmt_seconds
from .console import make_console
from .predict_table import fit_headline
from .text import FitTable, markup_safe, one_line, styled, unknown

PHASE_TITLE = {"cpu": "CPU", "embedding": "GPU · embedding", "layer": "GPU · each layer", "head": "GPU · head"}


def fmt_flops(f: float) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if f >= scale:
            return f"{f / scale:.2f} {unit}"
    return f"{f:.0f} FLOP"


def unknown_compute(expl) -> bool:
    """A prefill on a device with no FLOP/s figure: its (compute-bound) time is unknown; the stage times
    are the memory side only, a lower bound."""
    return expl.journey.predicted_s is None


def headline(expl, fit_prefix: bool = True) -> str:
    p, j = expl.prediction, expl.journey
    if j.mode == "decode":
        what = f"one decode token at context {j.context:,}"
    else:
        what = f"prefill of {j.tokens:,} tokens after context {j.context:,}"
    head = f"{p.model} · {p.quant} · {p.hw.name} · {p.engine} · batch {p.batch}: {what} = "
    if unknown_compute(expl):
        head += (f"unknown (no FLOP/s figure for this device; moving its bytes alone takes "
                 f"{fmt_seconds(j.total_s)}, a lower bound)")
    else:
        head += f"{fmt_seconds(j.total_s)} ({fmt_rate(j.tok_s)} tok/s)"
    if fit_prefix and not p.memory.fits:
        head = (f"DOES NOT FIT ({fmt_bytes(p.memory.total_bytes)} of {fmt_bytes(p.memory.capacity_bytes)}): "
                f"hypothetical timing. {head}")
    return one_line(head)


def ridge_line(p, j) -> str:
    name = markup_safe(p.hw.name)
    if not p.hw.matmul_flops:
        return (f"ridge point of {name}: unknown (no published FLOP/s figure; decode is memory-bound whatever "
                f"it is, prefill time is unknown). {j.kernels:,} kernel launches per pass.")
    line = (f"ridge point of {name}: {j.ridge_flops_per_byte:.0f} FLOP/byte ({p.hw.matmul_flops / 1e12:g} TFLOPS ÷ "
            f"{p.hw.bandwidth_gbps:g} GB/s); stages below it are memory-bound. {j.kernels:,} kernel launches per pass.")
    # what the stated range is made of: the fitted or prior band and each distance term
    line += f" Range {describe(prediction_basis(p), j.mode)}."
    rate = int8_rates(p.engine_profile, p.hw, p.quant)[0] if j.mode == "decode" else 0.0
    if rate and j.stream_gbps:
        line += (f" As this CPU engine runs one token (int8 kernels {rate / 1e9:,.0f} GFLOP/s, weights streamed at "
                 f"{j.stream_gbps:,.0f} GB/s: rates reached, not peaks) the ridge is {rate / (j.stream_gbps * 1e9):.1f} "
                 "FLOP/byte.")
    return line


BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "cpu": "yellow"}


def render_explanation(expl, console=None):
    console = console or make_console()
    p, j = expl.prediction, expl.journey
    low = unknown_compute(expl)
    measured = any(s.measured_s is not None for s in j.stages)
    t = FitTable(title=headline(expl, fit_prefix=False) + ("" if p.memory.fits else " — hypothetical: it does not fit"))
    time_col = "time ≥" if low else "time"
    # (name, numeric, drop rank: the highest goes first on a narrow terminal)
    for name, num, drop in (("#", True, 3), ("stage", False, 0), ("runs on", False, 5), ("data from", False, 7),
                            ("× layers", True, 2), ("bytes", True, 0), ("FLOPs", True, 4), ("FLOP/B", True, 6),
                            ("bound", False, 1), (time_col, True, 0), ("share", True, 0)):
        t.column(name, numeric=num, drop=drop, min_width=12 if name == "stage" else 8)
    if measured:
        t.column("measured", numeric=True).column("meas./pred.", numeric=True, drop=1)
    phase = None
    for i, s in enumerate(j.stages, 1):
        if s.phase != phase:
            phase = s.phase
            t.section()
        bound = styled({"cpu": "CPU"}.get(s.bound, s.bound), BOUND_STYLE.get(s.bound, ""))
        row = [str(i), s.label, s.unit, s.data_from, str(s.layers) if s.phase == "layer" else "",
               fmt_bytes(s.bytes) if s.bytes else "", fmt_flops(s.flops) if s.flops else "",
               f"{s.intensity:.1f}" if s.bytes else "", bound, fmt_seconds(s.seconds), f"{s.share:.1%}"]
        if measured:
            row += [fmt_seconds(s.measured_s) if s.measured_s is not None else "",
                    f"{s.measured_s / s.seconds:.2f}" if s.measured_s is not None and s.seconds else ""]
        t.row(*row)
    t.section()
    t.row("", styled("total", "bold"), "", "", "", fmt_bytes(sum(s.bytes for s in j.stages)),
          fmt_flops(sum(s.flops for s in j.stages)), "", "", styled(fmt_seconds(j.total_s), "bold"), "100%",
          *([fmt_seconds(expl.measured.step_s) if expl.measured.step_s else "", ""] if measured else []))
    if not p.memory.fits:
        console.print(f"[bold red]{markup_safe(fit_headline(p))}[/]")
    t.print(console)
    console.print(ridge_line(p, j))
    if j.stream_how:
        console.print(markup_safe(j.stream_how) + ".")
    if j.compute_how:
        console.print(markup_safe(j.compute_how) + ".")
    for s in j.stages:
        if s.note:
            console.print(f"[dim]· {markup_safe(s.label)}: {markup_safe(s.note)}[/]")
    if j.predicted_s is not None and abs(j.total_s - j.predicted_s) > 1e-9 * max(j.predicted_s, 1):
        console.print(f"[red]stages sum to {j.total_s} s but predict says {j.predicted_s} s[/]")
    if expl.measured is not None and (expl.measured.comparison or expl.measured.step_s):
        render_measured(expl, console)
    if expl.levers:
        render_levers(expl, console)


def render_levers(expl, console):
    p, j = expl.prediction, expl.journey
    lt = FitTable(title="What if … (the four levers)")
    bytes_col = "bytes/token" if j.mode == "decode" else "decode bytes/token"
    for name, num, drop in (("lever", False, 0), ("what if", False, 0), ("tok/s", True, 0), ("time/token", True, 2),
                            (bytes_col, True, 1), ("speed-up", True, 0), ("fits", False, 0)):
        lt.column(name, numeric=num, drop=drop, min_width=10 if name == "what if" else 6)
    rate = j.tok_s / j.batch if not unknown_compute(expl) else None
    lt.row(styled("now", "dim"), styled("as above", "dim"), unknown(rate, fmt_rate),
           unknown(1 / rate if rate else None, fmt_seconds), fmt_bytes(p.decode.bytes_per_token), "1.00×",
           "yes" if p.memory.fits else styled("no", "red"))
    for lv in expl.levers:
        known = lv.tok_s is not None and lv.speedup
        sp = styled(f"{lv.speedup:.2f}×", "green" if lv.speedup >= 1 else "red") if known else "unknown"
        lt.row(lv.lever, lv.what_if, unknown(lv.tok_s, fmt_rate),
               fmt_seconds(lv.ms_per_token / 1e3) if known else "unknown",
               fmt_bytes(lv.bytes_per_token), sp, "yes" if lv.fits else styled("no", "red"))
    lt.print(console)


def render_measured(expl, console):
    """Measured blocks (a `tokspeed measure` run) beside the predicted stages summed into the same blocks."""
    m, j = expl.measured, expl.journey
    where = ", ".join(f"{k} {v}" for k, v in m.point.items() if v not in (None, "")) or m.path
    t = FitTable(title=one_line(f"Measured ({where}) beside predicted"))
    for c in ("block", "predicted", "measured", "measured ÷ predicted"):
        t.column(c, numeric=c != "block")
    for row in m.comparison:
        ratio = f"{row['measured_s'] / row['predicted_s']:.2f}" if row["predicted_s"] else "–"
        t.row(row["block"], fmt_seconds(row["predicted_s"]), fmt_seconds(row["measured_s"]), ratio)
    if m.step_s:
        t.section()
        t.row(styled("decode step", "bold"), fmt_seconds(j.total_s), fmt_seconds(m.step_s), f"{m.step_s / j.total_s:.2f}")
    t.print(console)
    if m.comparison:
        console.print("[dim]predicted blocks include the launches of their kernels; the measured split comes from one "
                      "instrumented step (synchronised per block), the step time from the timed steps[/]")
