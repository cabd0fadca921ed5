"""`tokspeed compare MODEL --hardware A,B,C [--quant Q1,Q2]`: hardware or quants side by side."""

from __future__ import annotations

from ..errors import UserError
from .options import (add_model_options, add_plot_option, add_run_options, add_scale_options, check_plot, print_json,
                      scale_kwargs)


def add_parser(sub):
    p = sub.add_parser("compare", help="several hardware or quants side by side",
                       description="Predict one model on several devices (--hardware a,b,c) and/or quants "
                                   "(--quant F16,Q8_0,Q4_K_M), one row each.")
    p.add_argument("model")
    p.add_argument("--hardware", "--hw", dest="hardware", required=True, help="comma-separated hardware ids")
    add_model_options(p)
    add_run_options(p)
    add_scale_options(p)
    p.add_argument("--json", action="store_true")
    add_plot_option(p)
    return p


def run(args) -> int:
    from ..hardware.catalog import get_hardware
    from ..predict import predict

    check_plot(args)
    hws = [h.strip() for h in args.hardware.split(",") if h.strip()]
    quants = [q.strip() for q in (args.quant or "F16").split(",") if q.strip()]
    if not hws:
        raise UserError("--hardware needs at least one id")
    rows = []
    for h in hws:
        hw = get_hardware(h)
        for q in quants:
            rows.append(predict(args.model, hw, quant=q, kv_dtype=args.kv_dtype, engine=args.engine,
                                prompt=args.prompt, gen=args.gen, context=args.context, batch=args.batch,
                                **scale_kwargs(args)))
    if args.plot:
        from ..plots.verbs import plot_compare

        plot_compare(rows, args.plot)
    if args.json:
        print_json([r.to_dict() for r in rows])
        return 0
    from ..report.console import make_console
    from rich.table import Table

    from ..units import fmt_bytes, fmt_rate, fmt_seconds

    t = Table(title=f"{rows[0].model}: context {args.context} + prompt {args.prompt} + gen {args.gen}, batch {args.batch}")
    for col in ("hardware", "quant", "engine", "GB/s", "memory", "fits", "bound tok/s", "expected tok/s",
                "prefill tok/s", "TTFT"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(r.hw.id, r.quant, r.engine, f"{r.hw.bandwidth_gbps:g}",
                  f"{fmt_bytes(r.memory.total_bytes)} / {fmt_bytes(r.memory.capacity_bytes)}",
                  "yes" if r.memory.fits else "[red]no[/]", fmt_rate(r.decode.bound_tok_s), fmt_rate(r.decode.tok_s),
                  fmt_rate(r.prefill.tok_s) if r.prefill.tok_s else "-",
                  fmt_seconds(r.ttft_s) if r.ttft_s is not None else "-")
    make_console().print(t)
    return 0
