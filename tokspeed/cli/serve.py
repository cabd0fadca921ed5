"""`tokspeed serve MODEL --hardware HW --gpus N --engine E`: serving at scale from a step-level simulation of
the engine's scheduler. With ``--parallel`` or ``--disagg``: that layout; without: a search over layouts and
concurrency levels for the GPU count (best output tok/s per GPU within the SLOs, and the frontier).
``--json``: the contract of PRODUCT.md (model, hardware, gpus, engine, engine_version, quant, kv_dtype, isl,
osl, scenario, slo, configs[], frontier[])."""

from __future__ import annotations

import argparse
import math
import re

from ..engines.compat import default_engine
from ..errors import UserError
from ..plots.canvas import save
from ..plots.frontier import frontier_figure
from ..report.console import make_console
from ..report.text import FitTable, markup_safe, say
from ..scale.parallel import read_degrees
from ..serving.document import layout_text
from ..serving.metrics import SLO
from ..serving.requests import MAX_TRACE_REQUESTS, read_trace
from ..serving.run import Disagg, Load
from ..serving.speculative import Speculation
from ..serving.worker import Parallelism
from ..serving_api import ServeQuery, serve
from .options import (
    add_engine_option, add_hardware_options, add_kv_dtype_option, add_plot_option, check_plot, count, note_driver,
    number, print_json, resolve_hardware,
)


def _fraction(text):
    v = number(text)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text!r}")
    return v


def _positive(text):
    v = number(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return v


def _whole(text, top: int = 1 << 20):
    v = count(text)
    if not 1 <= v <= top:
        raise argparse.ArgumentTypeError(f"must be a whole number in [1, {top:,}], got {text!r}")
    return v


def _clients(text):
    return _whole(text, MAX_CLIENTS)


def _n_requests(text):
    return _whole(text, MAX_TRACE_REQUESTS)     # requests one simulation runs, drawn or replayed


MAX_CLIENTS = 65536         # requests in flight (the largest engine pools hold a few thousand sequences)


def add_parser(sub):
    p = sub.add_parser("serve", help="serving at scale: throughput, TTFT/TPOT under load, layout search",
                       description="Simulate the engine's scheduler step by step (decode tokens and prefill chunks "
                                   "under its token budget, paged KV pool) for one layout, or search layouts "
                                   "(TP/PP/replicas, expert and attention data parallelism, disaggregated "
                                   "prefill/decode) and concurrency levels for the best tok/s per GPU within SLOs.")
    p.add_argument("model", help="catalog id, config.json, Hugging Face folder or .gguf file")
    add_hardware_options(p)
    p.add_argument("--gpus", type=_whole, default=None, help="GPUs in all (default: what the layout uses, else 1)")
    add_engine_option(p, default=default_engine("serve"), what="serving engine")
    p.add_argument("--engine-version", default=None,
                   help="llama.cpp: the build era (as predict); vLLM, SGLang, TensorRT-LLM: the release, e.g. 0.4.1")
    p.add_argument("--quant", "-q", default=None, help="weight format (default: the model's released format, e.g. FP8 for DeepSeek-V3, else BF16)")
    add_kv_dtype_option(p)
    p.add_argument("--isl", type=count, default=1024, help="prompt tokens per request (default 1024)")
    p.add_argument("--osl", type=_whole, default=256, help="output tokens per request (default 256)")
    p.add_argument("--lengths", default=None, help="bench-server requests.jsonl: arrival times and lengths to replay")
    p.add_argument("--length-ratio", type=_fraction, default=1.0,
                   help="lengths uniform in [ratio x ISL/OSL, ISL/OSL] (bench_serving random_range_ratio; default 1)")
    p.add_argument("--prefix-hit", type=_fraction, default=0.0, help="share of each prompt found in the prefix cache")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--offline", action="store_true", help="every request queued at once (max throughput)")
    load.add_argument("--concurrency", type=_clients, default=None, help="requests in flight (closed loop)")
    load.add_argument("--rate", type=_positive, default=None, help="requests per second (Poisson unless --constant-rate)")
    p.add_argument("--constant-rate", action="store_true", help="constant gaps instead of Poisson arrivals")
    p.add_argument("--requests", type=_n_requests, default=None, help="requests to simulate (default by scenario)")
    p.add_argument("--seed", type=count, default=0, help="seed of arrivals and lengths (default 0)")
    p.add_argument("--parallel", default=None, help="one layout: tp=4,pp=1,ep=8,dp=2 (omit to search)")
    p.add_argument("--replicas", type=_whole, default=None, help="copies of the layout (default: fill --gpus)")
    p.add_argument("--disagg", default=None,
                   help="disaggregated prefill:decode workers, P:D (TP from --parallel) or PxTP:DxTP, e.g. 6x1:1x2")
    p.add_argument("--no-disagg", action="store_true", help="search without disaggregated layouts")
    p.add_argument("--slo-ttft-ms", type=_positive, default=None, help="TTFT limit (ms)")
    p.add_argument("--slo-tpot-ms", type=_positive, default=None, help="TPOT limit (ms)")
    p.add_argument("--slo-e2e-s", type=_positive, default=None, help="end-to-end latency limit (s)")
    p.add_argument("--slo-percentile", type=float, choices=[50.0, 90.0, 99.0], default=50.0,
                   help="percentile the SLOs hold at: 50, 90 or 99 (default 50)")
    p.add_argument("--speculative", choices=["mtp", "draft"], default=None, help="speculative decoding")
    p.add_argument("--spec-tokens", type=_whole, default=1, help="draft tokens per step (default 1)")
    p.add_argument("--spec-acceptance", type=_fraction, default=None, help="per-token acceptance (default: published)")
    p.add_argument("--draft-model", default=None, help="draft model for --speculative draft")
    p.add_argument("--token-budget", type=_whole, default=None, help="tokens per step (max_num_batched_tokens ...; "
                   "per attention-DP rank on TensorRT-LLM and vLLM)")
    p.add_argument("--max-seqs", type=_whole, default=None, help="sequences in flight (max_num_seqs ...; per "
                   "attention-DP rank on TensorRT-LLM and vLLM, as max_batch_size)")
    p.add_argument("--memory-fraction", type=_fraction, default=None, help="gpu_memory_utilization")
    p.add_argument("--top", type=_whole, default=10, help="layouts shown in the table (default 10)")
    p.add_argument("--json", action="store_true", help="strict JSON (the serve contract)")
    add_plot_option(p)
    return p


_DIS = re.compile(r"^(\d+)(?:x(\d+))?:(\d+)(?:x(\d+))?$")


def parse_layout(text: str | None):
    if not text:
        return None
    hint = "write tp=4,pp=1,ep=8,dp=2"
    try:
        degrees = read_degrees(text, ("tp", "pp", "ep", "dp"), hint)
    except UserError as e:          # the library's words (parallel=...) as the flag says them
        raise UserError(f"cannot read --parallel {text!r}", hint) from e
    return Parallelism(**degrees)


def parse_disagg(text: str | None, tp: int):
    if not text:
        return None
    m = _DIS.match(text.replace(" ", "").lower())
    if not m:
        raise UserError(f"cannot read --disagg {text!r}", "write P:D or PxTP:DxTP, e.g. 6x1:1x2")
    p, tp_p, d, tp_d = m.groups()
    return Disagg(int(p), int(tp_p or tp), int(d), int(tp_d or tp))


def run(args) -> int:
    check_plot(args)
    hw = resolve_hardware(args)
    par = parse_layout(args.parallel)
    dis = parse_disagg(args.disagg, par.tp if par else 1)
    if dis is not None and par is not None and (par.pp > 1 or par.ep > 1):
        raise UserError("--disagg takes only tp from --parallel")
    spec = None
    if args.speculative:
        spec = Speculation(args.speculative, args.spec_tokens, args.spec_acceptance, args.draft_model)
    single = par is not None or dis is not None
    load = _load(args, read_trace)
    if single and load is None:
        load = _default_load(args)
    doc = serve(ServeQuery(args.model, hw, args.engine, quant=args.quant, kv_dtype=args.kv_dtype, isl=args.isl,
                           osl=args.osl, length_ratio=args.length_ratio, prefix_hit=args.prefix_hit,
                           engine_version=args.engine_version, speculation=spec,
                           sched_overrides={"token_budget": args.token_budget, "max_seqs": args.max_seqs,
                                            "memory_fraction": args.memory_fraction},
                           gpus=args.gpus, parallel=None if dis else par, replicas=args.replicas, disagg=dis,
                           load=load, slo=SLO(args.slo_ttft_ms, args.slo_tpot_ms, args.slo_e2e_s,
                                              args.slo_percentile), search_disagg=not args.no_disagg))

    note_driver(doc["driver"], doc["driver_assumed"])
    for note in dict.fromkeys(w for c in doc["configs"][:args.top] for w in c.get("warnings", ())):
        say(note, "warning")           # what the simulation does not model (serving.unmodelled)
    if args.json:
        print_json(doc)
    else:
        _table(doc, args.top)
    if args.plot:
        save(frontier_figure(doc), args.plot)
    return 0


def _load(args, read_trace):
    n = args.requests
    if args.lengths:
        return Load("trace", trace=tuple(read_trace(args.lengths)))
    if args.offline:
        return Load("offline", n_requests=n, seed=args.seed)
    if args.concurrency is not None:
        return Load("concurrency", concurrency=args.concurrency, n_requests=n, seed=args.seed)
    if args.rate is not None:
        return Load("rate", rate_rps=args.rate, n_requests=n, poisson=not args.constant_rate, seed=args.seed)
    return None


def _default_load(args):
    return Load("offline", n_requests=args.requests, seed=args.seed)


def _ms(d, key="p50"):
    v = d.get(key)
    return "-" if v is None or not math.isfinite(v) else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _table(doc, top: int):
    """The configurations as a table sized to the console (``report.text.FitTable``: the title, caption and
    frontier line wrap at COLUMNS; the least needed columns go first when it is narrow)."""
    slo = doc["slo"]
    want = "" if not slo else " within " + ", ".join(
        f"{k.replace('_', ' ')} <= {v:g}" for k, v in slo.items() if v is not None and k != "percentile")
    title = (f"{doc['model']} on {doc['gpus']} x {doc['hardware']}, {doc['engine']} ({doc['quant']}, KV "
             f"{doc['kv_dtype']}), ISL {doc['isl']} / OSL {doc['osl']}, {doc['scenario']}{want}")
    t = FitTable(title=title)
    t.column("layout", min_width=16).column("conc", numeric=True).column("tok/s/GPU", numeric=True)
    t.column("tok/s/user", numeric=True).column("TTFT p50 ms", numeric=True, drop=2)
    t.column("TPOT p50 ms", numeric=True, drop=1).column("SLO", numeric=True, drop=3)
    for c in doc["configs"][:top]:
        ok = {True: "yes", False: "no", None: "-"}[c["meets_slo"]]
        if c.get("slo_misses"):           # the limits it misses and by how much
            ok = ", ".join(f"{x['metric']} +{x['margin_pct']:.0f} %" if x["margin_pct"] is not None else x["metric"]
                           for x in c["slo_misses"])
        if not c.get("measured", True):
            ok += " *"
        t.row(layout_text(c["layout"]), f"{c['concurrency']}", f"{c['output_tok_s_per_gpu']:,.0f}",
              f"{(c['tok_s_per_user'] or 0):,.1f}", _ms(c["ttft_ms"]), _ms(c["tpot_ms"]), ok)
    console = make_console()
    t.print(console)
    misses = [c for c in doc["configs"][:top] if c.get("slo_misses")]
    if misses:
        console.print(markup_safe(f"SLO {layout_text(misses[0]['layout'])}: "
                                  + "; ".join(x["text"] for x in misses[0]["slo_misses"])), soft_wrap=False,
                      overflow="fold")
    if any(not c.get("measured", True) for c in doc["configs"][:top]):
        console.print("* no serving measurement is behind this layout (pipeline parallelism): ranked after the "
                      "measured ones", soft_wrap=False, overflow="fold")
    if doc["frontier"]:
        pts = ", ".join(f"{p['tok_s_per_gpu']:,.0f}@{p['tok_s_per_user']:,.0f}" for p in doc["frontier"][:8])
        console.print(markup_safe(f"frontier (tok/s/GPU @ tok/s/user): {pts}"), soft_wrap=False, overflow="fold")
