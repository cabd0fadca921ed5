"""`tokspeed fit --hardware HW`: which catalog models run on this device, in which format, how fast."""

from __future__ import annotations

import sys

from ..advise.runs_here import DEFAULT_FIT_CONTEXT, rank_models
from ..engines.profile import get_engine
from ..errors import UserError
from ..models import window
from ..report.console import make_console
from ..report.text import FitTable, styled
from ..units import fmt_bytes, fmt_seconds
from .options import (
    add_engine_build_options, add_engine_option, add_hardware_options, engine_build_kwargs, note_driver, number,
    positive_int, print_json, resolve_hardware,
)

RULE = ("Ranking: models that fit in memory at --context and decode at least --min-tok-s come first, "
        "largest parameter count first, then fastest expected decode; then models that fit but are slower; "
        "then models that do not fit (fits: false, in their smallest format). For each model the "
        "highest-precision weight format its engine runs that fits (and meets --min-tok-s). Without "
        "--offload nothing is offloaded; with it, only models that fit in no format are offloaded. No format "
        "below the Q4 class (Q3_K_M, Q2_K, EXL2-3.0) unless --min-quality FORMAT or --allow-low-bits; a model "
        "released below 16 bits (gpt-oss MXFP4, DeepSeek-V3 FP8) is tried in its release and smaller, never "
        "wider. The trained window: " + window.RULE + " (gen is 1 here); without --context each model is tried "
        f"at {DEFAULT_FIT_CONTEXT:,} tokens of context or, where its window is shorter, the longest context the "
        "window holds, so a model that runs at its own window is never shown as not running; an explicit "
        "--context past a model's window does not fit unless --rope-scaling. Each row is `tokspeed predict "
        "MODEL --quant FORMAT --context N --prompt P --gen 1`. ppl Δ: perplexity increase llama.cpp's quantize tool publishes for the type "
        "(measured on Llama-3-8B, F16/BF16 on Mistral-7B); blank where none is published.")


def add_parser(sub):
    p = sub.add_parser("fit", help="rank every catalog model on a device: best format that fits, speed, memory",
                       description="Every catalog model on one device, in the best weight format that fits. " + RULE)
    add_hardware_options(p)
    p.add_argument("--context", type=positive_int, default=None,
                   help=f"tokens in the KV cache to fit (default {DEFAULT_FIT_CONTEXT:,}, a common chat length, "
                        "clamped to each model's trained window; predict's default is 0: one answer from an "
                        "empty cache)")
    p.add_argument("--prompt", type=positive_int, default=512, help="prompt tokens for prefill and TTFT (default 512)")
    p.add_argument("--min-tok-s", dest="min_tok_s", type=number, default=None, help="least expected decode tok/s")
    add_engine_option(p, default="llama.cpp", what="engine whose formats are tried")
    add_engine_build_options(p)
    p.add_argument("--gpus", type=positive_int, default=1, help="devices of --hardware that share a model (default 1)")
    p.add_argument("--offload", default="none", choices=["none", "auto", "layers", "experts"],
                   help="let weights that do not fit VRAM run from system RAM (llama.cpp); default none")
    p.add_argument("--family", help="only this family (HF model_type or id prefix: llama, qwen3, gemma3 ...)")
    p.add_argument("--max-params", dest="max_params", type=number, default=None, help="at most this many billion parameters")
    moe = p.add_mutually_exclusive_group()
    moe.add_argument("--moe", dest="moe", action="store_true", default=None, help="only mixture-of-experts models")
    moe.add_argument("--dense", dest="moe", action="store_false", help="only dense models")
    p.add_argument("--use", choices=["chat", "code", "reasoning"], help="only models made for this (where the catalog says)")
    p.add_argument("--min-quality", dest="min_quality", default=None, metavar="FORMAT",
                   help="lowest weight format tried, e.g. Q3_K_M (default: the Q4 class, Q4_K_M / IQ4_XS)")
    p.add_argument("--allow-low-bits", dest="allow_low_bits", action="store_true",
                   help="try every format, 3- and 2-bit ones too")
    p.add_argument("--rope-scaling", dest="rope_scaling", action="store_true",
                   help="let a context run past a model's trained window (the engine scales RoPE)")
    p.add_argument("--top", type=positive_int, default=None, help="show the first N rows")
    p.add_argument("--json", action="store_true", help="a JSON list, one object per model")
    return p


def _fmt_tok(x):
    return "?" if x is None else f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def run(args) -> int:
    if args.min_tok_s is not None and args.min_tok_s <= 0:
        raise UserError("--min-tok-s must be positive")
    if args.top == 0:
        raise UserError("--top must be at least 1")
    hw = resolve_hardware(args)

    prof = get_engine(args.engine, hw)      # the backend's driver on this device: checked and said once
    note_driver(prof.driver, prof.driver_assumed)
    try:
        rows = rank_models(hw, context=DEFAULT_FIT_CONTEXT if args.context is None else args.context,
                           context_to_window=args.context is None, prompt=args.prompt, min_tok_s=args.min_tok_s,
                           engine=args.engine, gpus=args.gpus or 1, offload=args.offload, family=args.family,
                           max_params=args.max_params, moe=args.moe, use=args.use, top=args.top,
                           min_quality=args.min_quality,
                           allow_low_bits=args.allow_low_bits, rope_scaling=args.rope_scaling,
                           **engine_build_kwargs(args))
    except UserError as e:      # the library's field name, as the flag the user typed
        raise UserError(e.message.replace("min_quality", "--min-quality"), e.suggestion) from None
    if args.json:
        print_json([r.to_dict() for r in rows])
        return 0
    if not rows:
        sys.stderr.write("tokspeed: no catalog model matches these filters\n")
        return 0

    gpus = f"{args.gpus} x " if (args.gpus or 1) > 1 else ""
    ctx = (f"context {DEFAULT_FIT_CONTEXT:,} (or the model's window)" if args.context is None
           else f"context {args.context:,}")
    t = FitTable(title=f"{gpus}{hw.name}: {len(rows)} model(s) at {ctx} + prompt {args.prompt} · "
                       f"{args.engine}{' · offload ' + args.offload if args.offload != 'none' else ''}",
                 caption=RULE)
    for col, num, drop in (("model", False, 0), ("params", True, 0), ("format", False, 0),
                           ("ppl Δ (llama.cpp, 8B)", True, 3), ("memory / capacity", True, 2),
                           ("decode tok/s", True, 0), ("prefill tok/s", True, 4), ("TTFT", True, 5), ("fits", False, 0)):
        t.column(col, numeric=num, drop=drop, min_width=10, whole=col == "model")
    for r in rows:
        q = r.quality or {}
        qual = f"{q['ppl_delta']:+.4f}" if "ppl_delta" in q else ""
        if r.fits and r.offload == "none":
            fits = styled("yes", "green") if r.meets_min_tok_s else styled("yes, slower than --min-tok-s", "yellow")
        elif r.fits:
            fits = styled(f"offloaded ({r.offload})", "yellow")
        elif r.reason:
            fits = styled("no: window", "red")      # the context is past its trained window
        else:
            fits = styled("no", "red")
        speeds = [_fmt_tok(r.decode["tok_s"]), _fmt_tok(r.prefill["tok_s"]),
                  "?" if r.ttft_s is None else fmt_seconds(r.ttft_s)]
        if not r.fits:      # numbers for a setup that does not fit: hypothetical, shown in parentheses
            speeds = [styled(f"({x})", "dim") for x in speeds]
        t.row(r.model, f"{r.params_b:,.1f}B", r.quant, qual,
              f"{fmt_bytes(r.memory['total_bytes'])} / {fmt_bytes(r.memory['capacity_bytes'])}", *speeds, fits)
    t.print(make_console())
    return 0
