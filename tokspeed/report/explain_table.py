"""The rich tables `tokspeed explain` prints: the journey of one token, then the levers."""

from __future__ import annotations

from ..units import fmt_bytes, fmt_rate, fmt_seconds

PHASE_TITLE = {"cpu": "CPU", "embedding": "GPU · embedding", "layer": "GPU · each layer", "head": "GPU · head"}


def fmt_flops(f: float) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if f >= scale:
            return f"{f / scale:.2f} {unit}"
    return f"{f:.0f} FLOP"


def headline(expl) -> str:
    p, j = expl.prediction, expl.journey
    if j.mode == "decode":
        what = f"one decode token at context {j.context:,}"
    else:
        what = f"prefill of {j.tokens:,} tokens after context {j.context:,}"
    return (f"{p.model} · {p.quant} · {p.hw.name} · {p.engine} · batch {p.batch}: {what} = "
            f"{fmt_seconds(j.total_s)} ({fmt_rate(j.tok_s)} tok/s)")


def render_explanation(expl, console=None):
    from rich.table import Table

    from .console import make_console

    console = console or make_console()
    p, j = expl.prediction, expl.journey
    measured = any(s.measured_s is not None for s in j.stages)
    t = Table(title=headline(expl), header_style="bold", title_justify="left")
    cols = ["#", "stage", "runs on", "data from", "× layers", "bytes", "FLOPs", "FLOP/B", "bound", "time", "share"]
    if measured:
        cols += ["measured", "meas./pred."]
    for c in cols:
        t.add_column(c, justify="right" if c in ("#", "× layers", "bytes", "FLOPs", "FLOP/B", "time", "share",
                                                  "measured", "meas./pred.") else "left")
    phase = None
    for i, s in enumerate(j.stages, 1):
        if s.phase != phase:
            phase = s.phase
            t.add_section()
        bound = {"memory": "[cyan]memory[/]", "compute": "[magenta]compute[/]", "cpu": "[yellow]CPU[/]"}.get(
            s.bound, s.bound)
        row = [str(i), s.label, s.unit, s.data_from, str(s.layers) if s.phase == "layer" else "",
               fmt_bytes(s.bytes) if s.bytes else "", fmt_flops(s.flops) if s.flops else "",
               f"{s.intensity:.1f}" if s.bytes else "", bound, fmt_seconds(s.seconds), f"{s.share:.1%}"]
        if measured:
            row += [fmt_seconds(s.measured_s) if s.measured_s is not None else "",
                    f"{s.measured_s / s.seconds:.2f}" if s.measured_s is not None and s.seconds else ""]
        t.add_row(*row)
    t.add_section()
    t.add_row("", "[bold]total[/]", "", "", "", fmt_bytes(sum(s.bytes for s in j.stages)),
              fmt_flops(sum(s.flops for s in j.stages)), "", "", f"[bold]{fmt_seconds(j.total_s)}[/]", "100%",
              *([fmt_seconds(expl.measured.step_s) if expl.measured.step_s else "", ""] if measured else []))
    console.print(t)
    ridge = j.ridge_flops_per_byte
    console.print(f"ridge point of {p.hw.name}: {ridge:.0f} FLOP/byte ({p.hw.matmul_flops / 1e12:g} TFLOPS ÷ "
                  f"{p.hw.bandwidth_gbps:g} GB/s); stages below it are memory-bound. "
                  f"{j.kernels:,} kernel launches per pass.")
    notes = [f"{s.label}: {s.note}" for s in j.stages if s.note]
    for n in notes:
        console.print(f"[dim]· {n}[/]")
    if abs(j.total_s - j.predicted_s) > 1e-9 * max(j.predicted_s, 1):
        console.print(f"[red]stages sum to {j.total_s} s but predict says {j.predicted_s} s[/]")
    if expl.measured is not None and (expl.measured.comparison or expl.measured.step_s):
        render_measured(expl, console)
    if expl.levers:
        lt = Table(title="What if … (the four levers)", header_style="bold", title_justify="left")
        bytes_col = "bytes/token" if j.mode == "decode" else "decode bytes/token"
        for c in ("lever", "what if", "tok/s", "time/token", bytes_col, "speed-up", "fits"):
            lt.add_column(c, justify="left" if c in ("lever", "what if") else "right")
        rate = j.tok_s / j.batch
        lt.add_row("[dim]now[/]", "[dim]as above[/]", fmt_rate(rate), fmt_seconds(1 / rate if rate else 0),
                   fmt_bytes(p.decode.bytes_per_token), "1.00×", "yes" if p.memory.fits else "[red]no[/]")
        for lv in expl.levers:
            sp = f"[green]{lv.speedup:.2f}×[/]" if lv.speedup >= 1 else f"[red]{lv.speedup:.2f}×[/]"
            lt.add_row(lv.lever, lv.what_if, fmt_rate(lv.tok_s), fmt_seconds(lv.ms_per_token / 1e3),
                       fmt_bytes(lv.bytes_per_token), sp, "yes" if lv.fits else "[red]no[/]")
        console.print(lt)


def render_measured(expl, console):
    """Measured blocks (a `tokspeed measure` run) beside the predicted stages summed into the same blocks."""
    from rich.table import Table

    m, j = expl.measured, expl.journey
    where = ", ".join(f"{k} {v}" for k, v in m.point.items() if v not in (None, "")) or m.path
    t = Table(title=f"Measured ({where}) beside predicted", header_style="bold", title_justify="left")
    for c in ("block", "predicted", "measured", "measured ÷ predicted"):
        t.add_column(c, justify="left" if c == "block" else "right")
    for row in m.comparison:
        ratio = f"{row['measured_s'] / row['predicted_s']:.2f}" if row["predicted_s"] else "–"
        t.add_row(row["block"], fmt_seconds(row["predicted_s"]), fmt_seconds(row["measured_s"]), ratio)
    if m.step_s:
        t.add_section()
        t.add_row("[bold]decode step[/]", fmt_seconds(j.total_s), fmt_seconds(m.step_s), f"{m.step_s / j.total_s:.2f}")
    console.print(t)
    if m.comparison:
        console.print("[dim]predicted blocks include the launches of their kernels; the measured split comes from one "
                      "instrumented step (synchronised per block), the step time from the timed steps[/]")
