"""`tokspeed explain MODEL --hardware HW`: the journey of one token, stage by stage, and the four levers; with
a layout or a load (``--gpus``, ``--parallel``, ``--disagg``, ``--concurrency``, ``--rate``): one serving step
per GPU by kernel family and where TTFT and TPOT go (``serving.step_explain``)."""

from __future__ import annotations

from ..errors import UserError
from ..explain import explain
from ..plots import check_path, measured_figure, save, stages_figure
from ..report.console import make_console
from ..report.explain_table import render_explanation
from ..report.predict_table import render_ways
from ..report.serving_explain import render_serving_explanation
from ..serving.run import Load
from ..serving.step_explain import explain_serving
from ..serving.worker import Parallelism
from ..serving_api import make_setup
from .options import (
    add_engine_build_options, add_hardware_options, add_model_options, engine_build_kwargs, note_driver, positive_int,
    print_json, resolve_hardware,
)
from .serve import parse_disagg, parse_layout


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
    serving = p.add_argument_group("a serving step (as tokspeed serve takes the layout and load)")
    serving.add_argument("--gpus", type=positive_int, default=None, help="GPUs in all")
    serving.add_argument("--parallel", default=None, help="the layout: tp=4,pp=1,ep=8,dp=2")
    serving.add_argument("--replicas", type=positive_int, default=None, help="copies of the layout")
    serving.add_argument("--disagg", default=None, help="disaggregated prefill:decode workers, PxTP:DxTP")
    load = serving.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=positive_int, default=None, help="requests in flight (closed loop)")
    load.add_argument("--rate", type=float, default=None, help="requests per second")
    serving.add_argument("--isl", type=positive_int, default=1024, help="prompt tokens per request (default 1024)")
    serving.add_argument("--osl", type=positive_int, default=256, help="output tokens per request (default 256)")
    serving.add_argument("--token-budget", type=positive_int, default=None, help="tokens per step (as serve)")
    serving.add_argument("--max-seqs", type=positive_int, default=None,
                         help="sequences in flight (per attention rank under attention DP, as serve)")
    return p


SERVING_FLAGS = ("gpus", "parallel", "disagg", "concurrency", "rate", "replicas")


def _serving(args) -> int:
    """The serving step of a layout (``serving.step_explain``)."""
    if args.prefill or args.measured or args.plot:
        raise UserError("--prefill, --measured and --plot explain one token, not a serving step",
                        "drop them, or drop --gpus/--parallel/--disagg/--concurrency")
    if args.rate is not None and not args.rate > 0:
        raise UserError(f"--rate must be a number > 0, got {args.rate!r}")
    hw = resolve_hardware(args)
    par = parse_layout(args.parallel)
    dis = parse_disagg(args.disagg, par.tp if par else 1)
    if dis is not None and par is not None and (par.pp > 1 or par.ep > 1):
        raise UserError("--disagg takes only tp from --parallel")
    used = dis.gpus if dis else (par.gpus if par else 1)
    if par is None and dis is None:
        par = Parallelism(tp=args.gpus or 1)
        used = par.gpus
    replicas = 1 if dis else (args.replicas or max(1, (args.gpus or used) // used))
    if args.gpus and args.gpus != used * replicas:
        raise UserError(f"the layout uses {used} GPUs x {replicas} replicas = {used * replicas}, but --gpus is "
                        f"{args.gpus}", f"use --gpus {used * replicas}")
    setup = make_setup(args.model, hw, args.engine, quant=args.quant, kv_dtype=args.kv_dtype, isl=args.isl,
                  osl=args.osl, engine_version=args.engine_version,
                  sched_overrides={"token_budget": args.token_budget, "max_seqs": args.max_seqs})
    setup.group(1, 1)
    if args.rate is not None:
        load = Load("rate", rate_rps=args.rate)
    else:
        load = Load("concurrency", concurrency=args.concurrency or 64 * replicas)
    batch = args.batch if args.batch > 1 and args.concurrency is None and args.rate is None else 0
    expl = explain_serving(setup, par, replicas, load, dis, batch, args.context or None)
    if args.json:
        print_json(expl.to_dict())
    else:
        render_serving_explanation(expl, make_console())
    return 0


def run(args) -> int:
    if args.batch < 1:
        raise UserError("--batch must be at least 1")
    if any(getattr(args, k) is not None for k in SERVING_FLAGS):
        return _serving(args)
    if args.plot:
        check_path(args.plot)
    hw = resolve_hardware(args)
    expl = explain(args.model, hw, prefill=args.prefill, context=args.context, batch=args.batch, quant=args.quant,
                   kv_dtype=args.kv_dtype, engine=args.engine, measured=args.measured, **engine_build_kwargs(args))
    note_driver(expl.prediction.driver, expl.prediction.driver_assumed)
    if args.json:
        print_json(expl.to_dict())
    else:
        con = make_console()
        render_explanation(expl, con)
        render_ways(con, expl.prediction, args.model, quant=args.quant, kv_dtype=args.kv_dtype, engine=args.engine,
                    prompt=args.prefill, gen=1, context=args.context, batch=args.batch, **engine_build_kwargs(args))
    if args.plot:
        m = expl.measured
        if m is not None and m.comparison:     # a `tokspeed measure` run: blocks, measured beside predicted
            pairs = [{"label": r["block"], "predicted": r["predicted_s"] * 1e3, "measured": r["measured_s"] * 1e3}
                     for r in m.comparison]
            save(measured_figure(pairs, "time per decode step (ms)"), args.plot)
        else:
            save(stages_figure(expl.to_dict()), args.plot)
    return 0
