"""`tokspeed sweep MODEL --hardware HW --context 1K,8K,128K [--batch 1,8] [--quant F16,Q4_K_M]`."""

from __future__ import annotations

from ..advise.alternatives import ways_to_run
from ..models import window
from ..plots.verbs import plot_sweep
from ..predict import sweep
from ..report.console import make_console
from ..report.text import FitTable, markup_safe, styled
from ..units import fmt_bytes, fmt_rate
from .options import (
    add_engine_build_options, add_hardware_options, add_model_options, add_plot_option, add_scale_options, check_plot,
    engine_build_kwargs, int_list, note_driver, positive_int, print_json, resolve_hardware, scale_kwargs,
)


def add_parser(sub):
    p = sub.add_parser("sweep", help="a table over context lengths, batch sizes and quants",
                       description="Predict over every combination of --context, --batch and --quant lists "
                                   "(e.g. the seeds' table: --context 1K,4K,16K,32K,64K,128K).")
    p.add_argument("model")
    add_hardware_options(p)
    add_model_options(p)
    add_engine_build_options(p)
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
    quants = [q.strip() for q in args.quant.split(",")] if args.quant else [None]   # None: predict's default
    return [p.to_dict() for p in sweep(args.model, hw, args.context, args.batch, quants, prompt=args.prompt,
                                       gen=args.gen, kv_dtype=args.kv_dtype, engine=args.engine,
                                       **engine_build_kwargs(args), **scale_kwargs(args))]


def run(args) -> int:
    check_plot(args)
    hw = resolve_hardware(args)
    rows = sweep_rows(args, hw)
    note_driver(rows[0].get("driver"), rows[0].get("driver_assumed"))
    if args.plot:
        plot_sweep(rows, args.plot)
    if args.json:
        print_json(rows)
        return 0

    t = FitTable(title=f"{rows[0]['model']} on {hw.name} ({rows[0]['engine']})")
    for col, num, drop in (("quant", False, 0), ("batch", True, 0), ("context", True, 0), ("weights/token", True, 3),
                           ("KV/token", True, 4), ("KV share", True, 0), ("bound tok/s", True, 2),
                           ("expected tok/s", True, 0), ("aggregate tok/s", True, 1), ("memory", True, 5),
                           ("fits", False, 0)):
        t.column(col, numeric=num, drop=drop, min_width=6)
    misfits = past = 0
    for r in rows:
        d, m = r["decode"], r["memory"]
        mark = "" if m["fits"] else "*"
        misfits += not m["fits"]
        beyond = past_window(r)
        past += beyond
        share = d["kv_bytes_per_token"] / (d["kv_bytes_per_token"] + d["weight_bytes_per_token"])
        t.row(r["quant"] + (" (assumed)" if r.get("quant_assumed") else ""), str(r["batch"]), f"{r['context']:,}", fmt_bytes(d["weight_bytes_per_token"]),
              fmt_bytes(d["kv_bytes_per_token"]), f"{share:.1%}", fmt_rate(d["bound_tok_s"]) + mark,
              styled(fmt_rate(d["tok_s"]) + mark, "" if m["fits"] else "dim"),
              fmt_rate(d["aggregate_tok_s"]) + mark, fmt_bytes(m["total_bytes"]),
              styled("past window", "yellow") if beyond else "yes" if m["fits"] else styled("NO", "bold red"))
    con = make_console()
    if misfits:
        con.print(styled(f"DOES NOT FIT: {misfits} of {len(rows)} rows (marked *: their speeds are hypothetical, "
                         "as if they fitted)", "bold red"))
        t.caption = "* hypothetical: does not fit. " + largest_contexts(rows)
    if past:
        t.caption = ((t.caption + " ") if t.caption else "") + (
            "past window: memory holds it, but not the trained window (" + window.RULE + "; the numbers "
            "assume the engine extends it with RoPE scaling). " + largest_contexts(rows))
    t.print(con)
    if misfits:
        render_misfit_ways(con, args, hw, rows)
    return 0


def render_misfit_ways(con, args, hw, rows) -> None:
    """Per quant and batch, the ways to run the shortest context that does not fit
    (``tokspeed.advise.alternatives``)."""
    first_misfit = {}
    for r in rows:
        key = (r["quant"], r["batch"])
        if not r["memory"]["fits"] and (key not in first_misfit or r["context"] < first_misfit[key]["context"]):
            first_misfit[key] = r
    con.print("[bold]ways to run what does not fit[/] (each predicted):")
    for (q, b), r in first_misfit.items():
        ways = ways_to_run(args.model, hw, quant=q, kv_dtype=args.kv_dtype, engine=args.engine, prompt=args.prompt,
                           gen=args.gen, context=r["context"], batch=b, **engine_build_kwargs(args),
                           **scale_kwargs(args))
        what = "; ".join(w["description"] for w in ways) or "nothing tried fits"
        con.print(f"  · [bold]{markup_safe(q)} batch {b} at context {r['context']:,}[/]: {markup_safe(what)}")


def past_window(r) -> bool:
    """The row fits memory but runs past the trained window (``tokspeed.models.window``: memory.max_context is
    capped at that window)."""
    m = r["memory"]
    return bool(m["fits"]) and not window.within(m["max_context"], r["context"], r["prompt"], r["gen"])


def largest_contexts(rows) -> str:
    """The longest --context that fits memory and the trained window, per quant and batch, with its arithmetic
    (memory.max_context, capped at the window, counts prompt and output too)."""
    seen = {}
    for r in rows:
        key = (r["quant"], r["batch"])
        if key not in seen:
            most = r["memory"]["max_context"]
            longest = window.longest_context(most, r["prompt"], r["gen"])
            seen[key] = f"{r['quant']} batch {r['batch']}: " + (
                f"{longest:,} ({most:,} - prompt {r['prompt']:,} - gen {r['gen']:,})" if longest >= 0 else "none")
    return "Longest context that fits: " + "; ".join(seen.values())
