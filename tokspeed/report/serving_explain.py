"""The text of `tokspeed explain ... --gpus/--parallel/--disagg/--concurrency`: one serving step per GPU of
a worker by kernel family (``serving.step_explain``), and where TTFT and TPOT go under the load."""

from __future__ import annotations

from .text import FitTable, markup_safe


def _ms(s: float) -> str:
    return f"{s * 1e3:,.2f}"


def render_serving_explanation(expl, console):
    d, p = expl.decode, expl.prefill
    t = FitTable(title=f"One serving step per GPU of {expl.layout} ({expl.gpus_per_worker} GPU(s) a worker): "
                       f"decode of {d.rows} rows at {d.context:,} cached tokens, a prompt of {p.rows:,} tokens")
    t.column("part", min_width=24).column("decode ms", numeric=True)
    t.column("share", numeric=True).column("prompt ms", numeric=True)
    t.column("share ", numeric=True, drop=1)
    pf = {x.name: x.seconds for x in p.parts}
    for x in d.parts:
        y = pf.get(x.name, 0.0)
        t.row(x.name, _ms(x.seconds), f"{x.seconds / d.total_s:.0%}" if d.total_s else "-", _ms(y),
              f"{y / p.total_s:.0%}" if p.total_s else "-")
    t.row("total", _ms(d.total_s), "100%", _ms(p.total_s), "100%")
    t.print(console)
    console.print(markup_safe(f"the simulator's step for the same rows: decode {_ms(d.simulator_s)} ms, prompt "
                              f"{_ms(p.simulator_s)} ms"), soft_wrap=False, overflow="fold")
    for lat in expl.latencies:
        rest = "; ".join(f"{x.name} {_ms(x.seconds)} ms" for x in lat.parts)
        console.print(markup_safe(f"{lat.metric} {_ms(lat.seconds)} ms = the step above {_ms(lat.step_s)} ms + "
                                  f"{rest}"), soft_wrap=False, overflow="fold")
