"""`tokspeed sweep MODEL --hardware HW --context 1K,8K,128K [--batch 1,8] [--quant F16,Q4_K_M]`."""

from __future__ import annotations

from .options import (add_hardware_options, add_model_options, add_plot_option, add_scale_options, check_plot,
                      int_list, positive_int, print_json, resolve_hardware, scale_kwargs)


def add_parser(sub):
    p = sub.add_parser("sweep", help="a table over context lengths, batch sizes and quants",
                       description="Predict over every combination of --context, --batch and --quant lists "
                                   "(e.g. the seeds' table: --context 1K,4K,16K,32K,64K,128K).")
    p.add_argument("model")
    add_hardware_options(p)
    add_model_options(p)
    p.add_argument("--context", type=int_list, default=[1024, 4096, 16384, 32768, 65536, 131072],
                   help="KV depths, e.g. 1K,8K,128K (default 1K..128K)")
    p.add_argument("--batch", type=int_list, default=[1], help="batch sizes, e.g. 1,8,32")
    p.add_argument("--prompt", type=positive_int, default=0, help="tokens prefilled per row (default 0)")
    p.add_argument("--gen", type=positive_int, default=1, help="tokens generated per row (default 1)")
    add_scale_options(p)
    p.add_argument("--json", action="store_true")
    add_plot_option(p)
    return p


def sweep_rows(args, hw) -> list[dict]:
    from ..predict import sweep

    quants = [q.strip() for q in (args.quant or "F16").split(",")]
    return [p.to_dict() for p in sweep(args.model, hw, args.context, args.batch, quants, prompt=args.prompt,
                                       gen=args.gen, kv_dtype=args.kv_dtype, engine=args.engine,
                                       **scale_kwargs(args))]


def run(args) -> int:
    check_plot(args)
    hw = resolve_hardware(args)
    rows = sweep_rows(args, hw)
    if args.plot:
        from ..plots.verbs import plot_sweep

        plot_sweep(rows, args.plot)
    if args.json:
        print_json(rows)
        return 0
    from ..report.console import make_console
    from rich.table import Table

    from ..units import fmt_bytes, fmt_rate

    t = Table(title=f"{rows[0]['model']} on {hw.name} ({rows[0]['engine']})")
    for col in ("quant", "batch", "context", "weights/token", "KV/token", "KV share", "bound tok/s", "expected tok/s",
                "aggregate tok/s", "memory", "fits"):
        t.add_column(col, justify="right")
    for r in rows:
        d, m = r["decode"], r["memory"]
        share = d["kv_bytes_per_token"] / (d["kv_bytes_per_token"] + d["weight_bytes_per_token"])
        t.add_row(r["quant"], str(r["batch"]), f"{r['context']:,}", fmt_bytes(d["weight_bytes_per_token"]),
                  fmt_bytes(d["kv_bytes_per_token"]), f"{share:.1%}", fmt_rate(d["bound_tok_s"]),
                  fmt_rate(d["tok_s"]), fmt_rate(d["aggregate_tok_s"]), fmt_bytes(m["total_bytes"]),
                  "yes" if m["fits"] else "[red]no[/]")
    make_console().print(t)
    return 0
