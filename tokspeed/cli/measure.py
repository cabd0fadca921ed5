"""`tokspeed measure MODEL`: a real decode on this machine, measured next to predicted; `tokspeed measure --from
FILE`: a llama-bench run's tests next to their predictions, and with `--calibrate` this machine calibrated on them."""

from __future__ import annotations

import os
import re

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..errors import UserError
from ..guard.console import safe_console
from ..guard.escape import markup
from ..measure.backend_torch import check_device, check_quant
from ..measure.bench_compare import calibrate_from, compare
from ..measure.calibrate import load_calibration
from ..measure.llama_bench import read_bench
from ..measure.profile import read_profile
from ..measure.run_file import write_run
from ..measure.runner import MeasureOptions, add_predictions, calibrate_run, finished, measure, resolve_hardware
from ..plots.verbs import plot_run
from ..quant.format_table import torch_default, torch_dtypes
from ..report.text import FitTable, one_line
from ..userfile import check_writable
from .options import add_plot_option, check_plot, count, counts, print_json


def add_parser(sub):
    p = sub.add_parser("measure", help="run a real decode here and set it next to the prediction",
                       description="Measure prefill and decode tok/s at several KV depths (prefilled first, as "
                                   "llama-bench -d), with achieved GB/s, MBU and MFU, next to the prediction for the "
                                   "same hardware (default: the probed `local` profile).")
    p.add_argument("model", nargs="?", help="catalog id or config (random weights), safetensors folder, or .gguf file "
                                            "(with --from: the model of every test, else read from the file names)")
    p.add_argument("--from", dest="from_file", metavar="FILE",
                   help="compare a llama-bench output (-o json, jsonl, csv, md or sql) with the predictions instead "
                        "of running; with --calibrate, fit this machine's calibration on its decode tests")
    p.add_argument("--backend", choices=["torch", "llama.cpp"], default="torch")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (torch backend)")
    p.add_argument("--quant", default="", help=f"torch: {' '.join(torch_dtypes())} (default {torch_default('cpu')} on "
                                                f"a CPU, {torch_default('cuda')} on CUDA); llama.cpp: read from the "
                                                "GGUF file")
    p.add_argument("--context", type=counts, default=[0, 512, 2048], help="KV depths before each run (default 0,512,2048)")
    p.add_argument("--batch", type=counts, default=[1], help="concurrent sequences, comma-separated (torch backend)")
    p.add_argument("--prompt", type=count, default=512, help="tokens prefilled at each depth (default 512)")
    p.add_argument("--gen", type=count, default=32, help="decode steps timed at each depth (default 32, min 5)")
    p.add_argument("--hardware", default="local", help="profile to predict for and to measure MBU against "
                                                       "(default local: from `tokspeed probe`; with --from: the "
                                                       "device the file names unless given)")
    p.add_argument("-o", "--output", help="write the run to this RUN.json")
    p.add_argument("--json", action="store_true", help="print the run as JSON on stdout")
    p.add_argument("--calibrate", action="store_true",
                   help="fit this machine's (eta, overhead) from the run and store it in the profile")
    p.add_argument("--text", help="generate from this prompt with real weights and a tokenizer, token by token")
    p.add_argument("--threads", type=count, default=0,
                   help="CPU threads (default: torch's default, the physical cores; fewer can be faster on a busy machine)")
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--flash-attn", "-fa", choices=("on", "off"), default="off",
                   help="llama.cpp backend: run the context with FlashAttention (default off, as llama-cpp-python "
                        "does; llama.cpp's own tools default to auto); the prediction beside it runs the same")
    add_plot_option(p)
    return p


MAX_THREADS = 1024  # policy: more threads than any CPU offers (4 x the cores of this one, if that is more)


def run(args) -> int:

    err = safe_console(stderr=True)
    if args.from_file:
        return run_from(args, err, safe_console())
    if not args.model:
        raise UserError("measure needs a MODEL to run, or --from FILE (a llama-bench output)")
    most = max(MAX_THREADS, 4 * (os.cpu_count() or 1))
    if args.threads > most:      # torch.set_num_threads(100000) segfaults; 1e30 overflows
        raise UserError(f"--threads {args.threads:,} is more than this machine could run (at most {most:,})",
                        "give the number of cores, or leave it out")
    check_plot(args)
    if args.output:
        check_writable(args.output, "run file")
    if args.flash_attn == "on" and args.backend != "llama.cpp":
        raise UserError("--flash-attn applies to --backend llama.cpp", "drop it, or add --backend llama.cpp")
    # every argument checked before torch or llama.cpp is imported and before any model is loaded
    opts = _options(args)
    if args.backend == "torch":
        check_device(args.device)
        try:
            import torch  # lazy: optional dependency (torch, the measure extra)
        except ImportError:
            raise UserError("the torch backend needs torch", "pip install 'tokspeed[measure]' (torch==2.13.0)") from None
        if args.threads:
            torch.set_num_threads(args.threads)
    if args.text is not None:
        return _generate(args, err)


    hw, profile_path = resolve_hardware(args.hardware)

    total = len(opts.contexts) * (len(opts.batches) if opts.backend == "torch" else 1) * opts.gen
    with Progress(TextColumn("[bold]measuring[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("decode steps"),
                  TimeRemainingColumn(), console=err, transient=True) as prog:
        task = prog.add_task("measure", total=total)
        run_ = measure(opts, hw, lambda n: prog.advance(task, n),
                       profile=read_profile(profile_path) if profile_path else None)
    if not args.calibrate:
        add_predictions(run_, hw, load_calibration(profile_path, args.backend) if profile_path else None)
    else:
        add_predictions(run_, hw, None)
        cal = calibrate_run(run_, hw, profile_path)
        add_predictions(run_, hw, cal)
        err.print(f"calibration stored in {markup(profile_path)}: eta_memory {cal.eta_memory:.3f}, overhead "
                  f"{cal.overhead_s * 1e3:.2f} ms/token (fit rms error {cal.rms_rel_error:.1%} over {cal.n_points} points)")
    out = finished(run_)
    if args.output:
        path = write_run(out, args.output)
        err.print(f"run written to {markup(path)}")
    if args.plot:
        err.print(f"chart written to {markup(plot_run(out, args.plot))}")
    for w in out["warnings"]:
        err.print(f"[yellow]warning:[/] {markup(w)}")
    if args.json:
        print_json(out, ensure_ascii=False)
    else:
        print_run(out, safe_console())
    return 0


# MeasureOptions' field names as this verb's flags
FLAGS = {"gen": "--gen", "contexts": "--context", "batches": "--batch", "prompt": "--prompt"}


def _options(args):
    """The run's options, checked (``MeasureOptions`` validates itself; its field names become flags here), and
    the rest of what ``measure`` needs: the torch format, the hardware profile, the model path or name."""

    if args.backend == "torch" and args.quant:
        check_quant(args.quant)
    if args.text is not None:
        if args.gen < 1:
            raise UserError(f"--gen must be at least 1, got {args.gen}")
        return None
    try:
        opts = MeasureOptions(args.model, args.backend, args.device, args.quant, args.context, args.batch, args.prompt,
                              args.gen, seed=args.seed, threads=args.threads or None,
                              flash_attention=args.flash_attn == "on")
    except UserError as e:
        msg = re.sub(r"\b(" + "|".join(FLAGS) + r")\b", lambda m: FLAGS[m.group(1)], e.message)
        raise UserError(msg, e.suggestion) from None
    resolve_hardware(args.hardware)          # an unknown --hardware or a missing profile: said now
    return opts


def print_run(run: dict, console) -> None:
    hw = run["hardware"]
    t = FitTable(title=one_line(f"{run['model']['id']} ({run['model']['source']}, {run['quant']}) · {run['backend']} "
                                f"on {run['device']} · predicted for {hw['id']}"))
    # measured beside predicted; at 80 columns the least important (MFU, then GB/s) are dropped, never a number cut
    for col, drop in (("batch", 0), ("depth", 0), ("prefill tok/s", 0), ("predicted prefill", 0),
                      ("decode tok/s", 0), ("predicted decode", 0), ("error", 0), ("GB/s", 2), ("MBU", 0),
                      ("MFU", 3)):
        t.column(col, numeric=True, drop=drop)
    for p in run["points"]:
        pred = p.get("predicted") or {}
        t.row(str(p["batch"]), str(p["context"]),
              f"{p['prefill_tok_s']:,.1f}" if p.get("prefill_tok_s") else "-",
              f"{pred['prefill_tok_s']:,.1f}" if pred.get("prefill_tok_s") else "-",
              f"{p['decode_tok_s']:,.2f}" + (" !" if p["decode_step"]["unstable"] else ""),
              f"{pred['tok_s']:,.2f}" if pred else "-",
              f"{p['error_pct']:+.0f} %" if pred else "-",
              f"{p['achieved_gbps']:.1f}", "?" if p.get("mbu") is None else f"{p['mbu']:.0%}", f"{p['mfu']:.1%}" if p.get("mfu") else "-")
    t.print(console)
    stages = run["points"][0].get("stages_ms") if run["points"] else None
    if stages:
        total = sum(stages.values())
        console.print("one decode step (depth {}), by stage: ".format(run["points"][0]["context"]) + " · ".join(
            f"{k} {v:.2f} ms ({v / total:.0%})" for k, v in stages.items()))
    pred = (run["points"][0].get("predicted") or {}) if run["points"] else {}
    if pred:
        console.print(f"predicted by {pred['source']}")
    console.print(f"counted: {run['counted']}", style="dim", markup=False)


def _generate(args, err) -> int:
    """--text: stream generated tokens with their times, after the first step's top candidates (the model's
    text is printed as it is, never read as markup)."""

    out = safe_console()
    events = []

    def emit(ev):
        events.append(ev)
        if args.json:
            return
        if ev["kind"] == "prompt":
            out.print(f"prompt: {ev['tokens']} tokens: " + " | ".join(repr(p) for p in ev["pieces"]), markup=False)
        elif ev["kind"] == "candidates":
            out.print(f"prefill + first step: {ev['ms']:.1f} ms; next-token distribution (top {len(ev['top'])}):")
            for text, prob, tid in ev["top"]:
                out.print(f"  {prob:6.1%}  {text!r} (#{tid})", markup=False)
        else:
            out.print(f"[bold]{markup(repr(ev['text']))}[/] (#{ev['id']}) [dim]{ev['ms']:.1f} ms[/]")

    if args.backend == "llama.cpp":
        from ..measure.backend_llamacpp import generate_text, load_llama  # lazy: optional dependency (llama_cpp, the llamacpp extra)

        lm = load_llama(args.model, 4096, flash_attention=args.flash_attn == "on")
        text = generate_text(lm, args.text, args.gen, emit)
    else:
        from ..measure.backend_torch import generate_text, load_model  # lazy: optional dependency (torch, the measure extra)

        lm = load_model(args.model, args.device, args.quant or torch_default(args.device),
                        max_seq=len(args.text.encode()) + args.gen + 8, max_batch=1, prompt=len(args.text.encode()))
        text = generate_text(lm, args.text, args.gen, emit)
    if args.json:
        print_json({"text": text, "events": events}, ensure_ascii=False)
    else:
        out.print(f"generated: {text}", markup=False)
    return 0


def run_from(args, err, out) -> int:
    """``--from FILE``: a llama-bench run beside the predictions, and with ``--calibrate`` this machine calibrated on
    its decode tests (``tokspeed.measure.bench_compare``)."""
    # lazy, as the rest of this verb: every tokspeed call imports the cli modules (start-up time)

    _check_from(args)
    rows = read_bench(args.from_file)
    hw, profile_path = None, None
    hardware = args.hardware if args.hardware != "local" or args.calibrate else ""
    if hardware:
        hw, profile_path = resolve_hardware(hardware)
    compared, skipped = compare(rows, args.model, hw)
    cal = None
    if args.calibrate:
        cal = calibrate_from(compared, hw, profile_path)
        compared, skipped = compare(rows, args.model, resolve_hardware(hardware)[0])   # read back: calibrated
        err.print(f"calibration stored in {markup(profile_path)}: eta_memory {cal.eta_memory:.3f}, overhead "
                  f"{cal.overhead_s * 1e3:.2f} ms/token (fit rms error {cal.rms_rel_error:.1%} over {cal.n_points} "
                  "decode tests); later llama.cpp predictions on this profile use it")
    for line in skipped:
        err.print(f"[yellow]not predicted:[/] {markup(line)}")
    for note in sorted({c.era for c in compared if c.era}):
        err.print(f"note: {markup(note)}")
    if args.json:
        print_json({"file": str(args.from_file), "tests": [_as_dict(c) for c in compared], "not_predicted": skipped,
                    "calibration": cal.to_dict() if cal else None}, ensure_ascii=False)
        return 0
    _table(compared, out)
    return 0


def _as_dict(c) -> dict:
    r = c.row
    return {"test": r.test, "metric": r.metric, "model": c.model, "quant": c.quant, "engine": c.engine,
            "device": c.device, "measured_tok_s": r.avg_ts, "stddev_tok_s": r.stddev_ts,
            "predicted_tok_s": c.predicted_tok_s, "error_pct": c.error_pct, "build": r.build, "era": c.era,
            "source": c.source}


def _table(compared, console) -> None:
    t = FitTable(title="llama-bench measured beside predicted (tok/s)")
    for col, numeric, drop in (("test", True, 0), ("model", False, 0), ("quant", False, 2), ("backend", False, 3),
                               ("measured", True, 0), ("predicted", True, 0), ("error", True, 0)):
        t.column(col, numeric=numeric, drop=drop)
    for c in compared:
        t.row(c.row.test, c.model, c.quant, c.engine.replace("llama.cpp-", ""),
              f"{c.row.avg_ts:,.2f} ± {c.row.stddev_ts:,.2f}", f"{c.predicted_tok_s:,.2f}", f"{c.error_pct:+.0f} %")
    t.print(console)
    devices = sorted({c.device for c in compared})
    console.print(f"on {', '.join(devices)}; predicted by {compared[0].source.split(';')[0]}", markup=False)


def _check_from(args) -> None:
    if args.text is not None or args.output or args.plot:
        raise UserError("--from compares a llama-bench file: --text, --output and --plot do not apply",
                        "drop them")
