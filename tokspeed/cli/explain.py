"""`tokspeed explain MODEL --hardware HW`: the journey of one token, stage by stage, and the four levers."""

from __future__ import annotations

from .options import (add_engine_build_options, add_hardware_options, add_model_options, engine_build_kwargs,
                      note_driver, positive_int, print_json, resolve_hardware)


def add_parser(sub):
    p = sub.add_parser("explain", help="where the time of one token goes, stage by stage",
                       description="The journey of one decode token (or a prefill with --prefill N): CPU, "
                                   "embedding, each layer, LM head, sampling — with the hardware unit, bytes, "
                                   "FLOPs, bound and time of each stage (they sum to the predicted time), "
                                   "then what fewer parameters, another quant, MHA/GQA or a longer context would do.")
    p.add_argument("model", help="catalog id, config.json, Hugging Face folder, .gguf file or ollama:NAME[:TAG]")
    add_hardware_options(p)
    add_model_options(p)
    add_engine_build_options(p)
    p.add_argument("--context", type=positive_int, default=0, help="tokens already in the KV cache (default 0)")
    p.add_argument("--prefill", type=positive_int, default=0, help="explain a prefill of N tokens instead of one decode token")
    p.add_argument("--batch", type=positive_int, default=1, help="concurrent sequences (default 1)")
    p.add_argument("--measured", metavar="RUN.json", help="a measurement file: its stage times go beside ours")
    p.add_argument("--plot", metavar="FILE", help="also draw the stage times (.png or .svg)")
    p.add_argument("--json", action="store_true", help="print the JSON document instead of tables")
    return p


def run(args) -> int:
    from ..errors import UserError
    from ..explain import explain

    if args.batch < 1:
        raise UserError("--batch must be at least 1")
    if args.plot:
        from ..plots import check_path

        check_path(args.plot)
    hw = resolve_hardware(args)
    expl = explain(args.model, hw, prefill=args.prefill, context=args.context, batch=args.batch, quant=args.quant,
                   kv_dtype=args.kv_dtype, engine=args.engine, measured=args.measured, **engine_build_kwargs(args))
    note_driver(expl.prediction.driver, expl.prediction.driver_assumed)
    if args.json:
        print_json(expl.to_dict())
    else:
        from ..report.console import make_console
        from ..report.explain_table import render_explanation
        from ..report.predict_table import render_ways

        con = make_console()
        render_explanation(expl, con)
        render_ways(con, expl.prediction, args.model, quant=args.quant, kv_dtype=args.kv_dtype, engine=args.engine,
                    prompt=args.prefill, gen=1, context=args.context, batch=args.batch, **engine_build_kwargs(args))
    if args.plot:
        from ..plots import measured_figure, save, stages_figure

        m = expl.measured
        if m is not None and m.comparison:     # a `tokspeed measure` run: blocks, measured beside predicted
            pairs = [{"label": r["block"], "predicted": r["predicted_s"] * 1e3, "measured": r["measured_s"] * 1e3}
                     for r in m.comparison]
            save(measured_figure(pairs, "time per decode step (ms)"), args.plot)
        else:
            save(stages_figure(expl.to_dict()), args.plot)
    return 0
