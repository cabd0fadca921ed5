"""`tokspeed plan MODEL --target-tok-s X`: which hardware (single, multi-GPU, offload) meets a speed target."""

from __future__ import annotations

from ..advise.plan import load_prices, plan
from ..engines.default_format import default_quant
from ..errors import UserError
from ..hardware.catalog import get_hardware
from ..report.console import make_console
from ..report.text import FitTable, markup_safe
from ..resolve import resolve_model
from ..units import fmt_bytes, fmt_rate
from ..workload import DEFAULT_ENGINE
from .options import (
    add_engine_build_options, add_engine_option, add_kv_dtype_option, engine_build_kwargs, number, positive_int,
    print_json,
)


def add_parser(sub):
    p = sub.add_parser("plan", help="rank hardware that meets a tok/s target for a model",
                       description="Try every catalog device alone, with weights offloaded to RAM, and in groups of "
                                   "2-16 (layer split / tensor parallel); rank those whose expected per-user decode "
                                   "tok/s meets --target-tok-s by price (with --prices) or power.")
    p.add_argument("model", help="catalog id, config.json or Hugging Face folder")
    p.add_argument("--target-tok-s", dest="target", type=number, required=True, help="per-user decode tok/s wanted")
    p.add_argument("--quant", "-q", default=None, help="weight format (default: as `tokspeed predict` assumes it per engine)")
    add_kv_dtype_option(p)
    add_engine_option(p)
    add_engine_build_options(p)
    p.add_argument("--context", type=positive_int, default=4096, help="tokens in the KV cache (default 4096)")
    p.add_argument("--batch", type=positive_int, default=1, help="concurrent sequences (default 1)")
    p.add_argument("--users", type=positive_int, default=None, help="concurrent users; target is per user")
    p.add_argument("--budget", type=number, default=None, help="USD per hour at most (needs --prices)")
    p.add_argument("--prices", default=None, help="TOML file: hardware-id = USD per device-hour")
    p.add_argument("--hardware", "--hw", dest="hardware", default=None, help="only these ids (comma-separated)")
    p.add_argument("--top", type=positive_int, default=15, help="rows to show (default 15)")
    p.add_argument("--all", action="store_true", help="also list setups that miss the target")
    p.add_argument("--json", action="store_true")
    return p


def run(args) -> int:
    hws = None
    if args.hardware:
        hws = [get_hardware(h.strip()) for h in args.hardware.split(",") if h.strip()]
    if args.users == 0 or args.batch == 0:
        raise UserError("--users and --batch must be at least 1")
    prices = load_prices(args.prices) if args.prices else None
    opts = plan(args.model, args.target, quant=args.quant, engine=args.engine, context=args.context, batch=args.batch,
                users=args.users, budget=args.budget, prices=prices, kv_dtype=args.kv_dtype, hardware=hws,
                **engine_build_kwargs(args))
    shown = opts if args.all else [o for o in opts if o.meets]
    shown = shown[: args.top]
    if args.json:
        print_json({"model": args.model, "target_tok_s": args.target, "meeting": sum(o.meets for o in opts),
                    "tried": len(opts), "options": [o.to_dict() for o in shown]})
        return 0

    con = make_console()
    who = f"{args.users} users" if args.users else f"batch {args.batch}"

    spec = resolve_model(args.model)[0]
    if not args.quant:      # what predict assumes for this engine (a device without it may fall back to BF16)

        fmt = f"{default_quant(spec, args.engine, None)[0]} (assumed)"
    else:
        fmt = args.quant
    t = FitTable(title=f"{spec.id} {fmt} at {args.context:,} context, {who}: "
                       f"{sum(o.meets for o in opts)} of {len(opts)} setups reach {args.target:g} tok/s per user")
    for c, num, drop in (("hardware", False, 0), ("setup", False, 0), ("tok/s per user", True, 0), ("headroom", True, 3),
                         ("aggregate", True, 2), ("memory / capacity", True, 4), ("power", True, 5), ("USD/h", True, 1)):
        t.column(c, numeric=num, drop=drop, min_width=10)
    for o in shown:
        t.row(o.hardware, o.setup, fmt_rate(o.tok_s), f"{o.headroom:.2f}x", fmt_rate(o.aggregate_tok_s),
              f"{fmt_bytes(o.memory_bytes)} / {fmt_bytes(o.capacity_bytes)}",
              f"{o.power_w:g} W" if o.power_w else "-",
              f"{o.price_per_hour:.2f}" if o.price_per_hour is not None else "-")
    t.print(con)
    if not shown:
        best = max(opts, key=lambda o: o.tok_s if o.fits else 0, default=None)
        if best is not None and best.fits:
            con.print(f"nothing reaches {args.target:g} tok/s; fastest: {markup_safe(best.hardware)} "
                      f"{markup_safe(best.setup)} at {fmt_rate(best.tok_s)} tok/s (use --all to list every setup)")
    return 0
