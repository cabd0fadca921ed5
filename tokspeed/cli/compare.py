"""`tokspeed compare MODEL --hardware A,B,C [--quant Q1,Q2]`: hardware or quants side by side."""

from __future__ import annotations

from ..advise.alternatives import ways_to_run
from ..errors import UserError
from ..hardware.catalog import get_hardware
from ..plots.verbs import plot_compare
from ..predict import predict
from ..report.console import make_console
from ..report.text import FitTable, markup_safe, styled
from ..units import fmt_bytes, fmt_rate, fmt_seconds
from .options import (
    add_engine_build_options, add_model_options, add_plot_option, add_run_options, add_scale_options, check_plot,
    engine_build_kwargs, print_json, scale_kwargs,
)


def add_parser(sub):
    p = sub.add_parser("compare", help="several hardware or quants side by side",
                       description="Predict one model on several devices (--hardware a,b,c) and/or quants "
                                   "(--quant F16,Q8_0,Q4_K_M), one row each.")
    p.add_argument("model")
    p.add_argument("--hardware", "--hw", dest="hardware", required=True, help="comma-separated hardware ids")
    add_model_options(p)
    add_engine_build_options(p)
    add_run_options(p)
    add_scale_options(p)
    p.add_argument("--json", action="store_true")
    add_plot_option(p)
    return p


def run(args) -> int:
    check_plot(args)
    hws = [h.strip() for h in args.hardware.split(",") if h.strip()]
    quants = ([q.strip() for q in args.quant.split(",") if q.strip()] if args.quant else []) or [None]
    if not hws:
        raise UserError("--hardware needs at least one id")
    rows = []
    for h in hws:
        hw = get_hardware(h)
        for q in quants:
            rows.append(predict(args.model, hw, quant=q, kv_dtype=args.kv_dtype, engine=args.engine,
                                prompt=args.prompt, gen=args.gen, context=args.context, batch=args.batch,
                                **engine_build_kwargs(args), **scale_kwargs(args)))
    if args.plot:
        plot_compare(rows, args.plot)
    if args.json:
        print_json([r.to_dict() for r in rows])
        return 0

    con = make_console()
    t = FitTable(title=f"{rows[0].model}: context {args.context:,} + prompt {args.prompt:,} + gen {args.gen:,}, "
                       f"batch {args.batch}")
    for col, num, drop in (("hardware", False, 0), ("quant", False, 0), ("engine", False, 4), ("GB/s", True, 5),
                           ("memory", True, 3), ("fits", False, 0), ("bound tok/s", True, 2),
                           ("expected tok/s", True, 0), ("prefill tok/s", True, 1), ("TTFT", True, 0)):
        t.column(col, numeric=num, drop=drop, min_width=8)
    for r in rows:
        hyp = not r.memory.fits
        mark = "*" if hyp else ""      # a speed for a setup that cannot run: hypothetical
        t.row(r.hw.id, r.quant, r.engine, f"{r.hw.bandwidth_gbps:g}",
              f"{fmt_bytes(r.memory.total_bytes)} / {fmt_bytes(r.memory.capacity_bytes)}",
              "yes" if r.memory.fits else styled("NO", "bold red"), fmt_rate(r.decode.bound_tok_s) + mark,
              styled(fmt_rate(r.decode.tok_s) + mark, "dim" if hyp else ""),
              (fmt_rate(r.prefill.tok_s) + mark) if r.prefill.tok_s else ("unknown" if r.prompt else "-"),
              (fmt_seconds(r.ttft_s) + mark) if r.ttft_s is not None else ("unknown" if r.prompt else "-"))
    misfits = [r for r in rows if not r.memory.fits]
    if misfits:
        con.print(styled(f"DOES NOT FIT: {len(misfits)} of {len(rows)} setups (marked *: their speeds are "
                         "hypothetical, as if they fitted); the ways to run them follow the table", "bold red"))
        t.caption = "* hypothetical: does not fit"
    t.print(con)
    if misfits:
        render_misfit_ways(con, args, misfits)
    return 0


def render_misfit_ways(con, args, misfits) -> None:
    """For each setup that does not fit, its ways to run (``tokspeed.advise.alternatives``), on one line each."""
    con.print("[bold]ways to run what does not fit[/] (each predicted):")
    for r in misfits:
        ways = ways_to_run(args.model, r.hw, quant=r.quant, kv_dtype=args.kv_dtype, engine=args.engine,
                           prompt=args.prompt, gen=args.gen, context=args.context, batch=args.batch,
                           **engine_build_kwargs(args), **scale_kwargs(args))
        what = "; ".join(w["description"] for w in ways) or "nothing tried fits (offload, more devices, smaller format)"
        con.print(f"  · [bold]{markup_safe(r.hw.id)} {markup_safe(r.quant)}[/]: {markup_safe(what)}")
