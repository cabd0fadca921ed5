"""Options shared by predict, sweep, compare (and the verbs built on them): the PRODUCT.md contract."""

from __future__ import annotations

import argparse
import json
import sys

from ..engines.compat import default_why, engine_help
from ..engines.cpu import with_numa, with_threads
from ..engines.driver import on_driver
from ..errors import UserError
from ..extras import require
from ..guard.redact import known
from ..hardware.catalog import hardware_from_flags, lookup_hardware, with_memory, with_tflops
from ..plots.canvas import check_path
from ..quant.format_table import quant_help
from ..quant.kv import KV_BYTES
from ..report.text import say
from ..units import GIB, parse_bytes, parse_capacity, parse_count, parse_counts, parse_number
from ..workload import DEFAULT_ENGINE, DEFAULT_GEN, DEFAULT_PROMPT, FLASH_ATTN, NBATCH, UBATCH, engine_build


def _arg_type(parse, name: str):
    """An argparse ``type=`` from a units parser: its UserError becomes argparse's one-line usage error
    ``argument --flag: ...`` (the flag named by argparse). Ranges are the library's to check."""
    def convert(text):
        try:
            return parse(text)
        except UserError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = name          # argparse says "invalid <name> value" for a ValueError
    return convert


count = _arg_type(lambda t: parse_count(t, "the value"), "count")              # 4096, 32K, 1M
counts = _arg_type(lambda t: parse_counts(t, "the value"), "counts")           # 1024,8K,128K
number = _arg_type(lambda t: parse_number(t, "the value"), "number")           # finite real
positive_int = count                 # the name the verbs import
int_list = counts


def _check_bytes(text: str) -> str:
    parse_bytes(text, what="the value")
    return text


def _check_tflops(text: str) -> float:
    v = parse_number(text, "the value")
    if 0 < v < 1e-12:                # below one FLOP/s every prefill time is infinite
        raise UserError(f"{text} TFLOPS is less than one FLOP per second")
    return v


byte_size = _arg_type(_check_bytes, "size")           # checked here, read by hardware_from_flags
tflops = _arg_type(_check_tflops, "tflops")


def add_hardware_options(p, required: bool = True):
    p.add_argument("--hardware", "--hw", dest="hardware", required=False,
                   help="catalog id or alias (rtx-4090, h100-sxm, m2-ultra-76), or a TOML file")
    p.add_argument("--bandwidth", type=byte_size, help="custom device: memory bandwidth, e.g. 1008GB/s (with --memory)")
    p.add_argument("--memory", type=byte_size, help="custom device: memory capacity, e.g. 24GB; with --hardware, that device with this much memory (a Mac of another configuration)")
    p.add_argument("--tflops", type=tflops, help="custom device: dense FP16 TFLOPS (on a CPU: its FP32 SIMD rate)")
    p.add_argument("--threads", "-t", type=int, default=None,
                   help="CPU engines: threads llama.cpp runs (-t; default: the physical cores)")
    p.add_argument("--driver", default=None,
                   help="GPU driver under the llama.cpp backend: radv amdvlk amd-windows anv intel-windows nvidia "
                        "nvidia-cm1 nvk moltenvk (Vulkan), cuda, rocm-7 rocm-6, level-zero opencl (SYCL), metal (default: the --os "
                        "default; the output says which was assumed)")
    p.add_argument("--os", default=None, help="operating system: linux, windows, macos (default linux; macos on Apple)")
    p.add_argument("--numa", choices=("distribute",), default=None,
                   help="CPU engines on a multi-socket CPU: llama.cpp's --numa distribute, the weights spread over "
                        "every socket's memory (default: one socket's, where the mmap'd file was first read)")


# -- options that mean one thing in every verb: declared once here, each verb states its default and why -------

def add_engine_option(p, default: str = DEFAULT_ENGINE, what: str = "engine the numbers are for"):
    """--engine/-e: every engine of the capability table (tokspeed/engines/capabilities.toml, ``engine_help``)."""
    why = default_why(default)     # why the verb assumes it (the engine table's why_default)
    p.add_argument("--engine", "-e", default=default, metavar="ENGINE",
                   help=f"{what}: {engine_help()} (llama.cpp picks its backend by the device's vendor) "
                        f"(default {default}{': ' + why if why else ''})")


def add_kv_dtype_option(p):
    """--kv-dtype: one set of choices (tokspeed.quant.kv.KV_BYTES); an engine that cannot run one says so."""
    p.add_argument("--kv-dtype", default="f16", type=str.lower, choices=list(KV_BYTES), metavar="DTYPE",
                   help=f"KV-cache dtype: {' '.join(KV_BYTES)} (default f16: what every engine keeps unless told; "
                        "the engine's own limits are checked with the rest of the setup)")


def add_model_options(p):
    p.add_argument("--quant", "-q", default=None, help=quant_help())
    add_kv_dtype_option(p)
    add_engine_option(p)


def _batch_or_max(text):
    """--batch: a count, or ``max`` (predict: the largest batch the engine would run)."""
    return "max" if str(text).strip().lower() == "max" else count(text)


def add_run_options(p, batch_max: bool = False):
    p.add_argument("--prompt", type=positive_int, default=DEFAULT_PROMPT, help=f"tokens prefilled (default {DEFAULT_PROMPT})")
    p.add_argument("--gen", type=positive_int, default=DEFAULT_GEN, help=f"tokens generated (default {DEFAULT_GEN})")
    p.add_argument("--context", type=positive_int, default=0,
                   help="tokens already in the KV cache (llama-bench -d) (default 0: one answer from an empty cache, "
                        "as llama-bench measures by default; fit ranks at 8192, a chat's context)")
    p.add_argument("--batch", type=_batch_or_max if batch_max else positive_int, default=1,
                   help="concurrent sequences (default 1)" + ("; max: the largest batch the engine runs" if batch_max else ""))


def add_scale_options(p):
    """Multi-GPU, offload, serving and cost options (``tokspeed.scale``)."""
    g = p.add_argument_group("scale: multi-GPU, offload, serving")
    g.add_argument("--gpus", type=positive_int, default=1, help="devices of --hardware that share the model (default 1)")
    g.add_argument("--parallel", default=None,
                   help="tp | pp | split (llama.cpp layer split) | tp=4,pp=2 (default: split for llama.cpp, tp otherwise)")
    g.add_argument("--gpu-layers", "-ngl", dest="gpu_layers", type=positive_int, default=None,
                   help="llama.cpp -ngl: layers on the GPU (n_layers + 1 includes the output layer); the rest run on the CPU")
    g.add_argument("--offload", default="none", choices=["none", "auto", "layers", "stream", "experts"],
                   help="weights that do not fit VRAM: layers (llama.cpp, CPU computes them), auto (largest -ngl that fits), "
                        "stream (Accelerate: copied over the host link every token), experts (llama.cpp --n-cpu-moe: "
                        "MoE expert tensors on the CPU)")
    g.add_argument("--cpu", default=None, help="host memory system for offload (default ddr5-5600-2ch)")
    g.add_argument("--users", type=positive_int, default=None, help="concurrent users (closed loop): per-user and aggregate tok/s")
    g.add_argument("--rate", type=number, default=None, help="requests per second for continuous batching (TTFT, TPOT)")
    g.add_argument("--price-per-hour", dest="price_per_hour", type=number, default=None,
                   help="USD per hour for the whole setup: cost per 1M tokens")


def scale_kwargs(args) -> dict:
    """--users and --rate are checked by the library (tokspeed.scale); the price only prints here."""
    if getattr(args, "price_per_hour", None) is not None and args.price_per_hour < 0:
        raise UserError("--price-per-hour must not be negative")
    return {k: getattr(args, k, d) for k, d in (("gpus", 1), ("parallel", None), ("gpu_layers", None),
                                                ("offload", "none"), ("cpu", None), ("users", None), ("rate", None),
                                                ("price_per_hour", None))}


def add_engine_build_options(p):
    """The engine's build and settings: --engine-version and --flash-attn."""
    p.add_argument("--engine-version", default=None,
                   help="llama.cpp era: a build (b6000) or a year-month (2025-08); default the newest calibrated")
    p.add_argument("--flash-attn", "-fa", choices=("on", "off", "auto"), default="auto",
                   help="llama.cpp -fa: attention fused (on) or not (off); auto: the default of that build "
                        "and front end (on in 2025 builds, off in ollama and LM Studio)")


def engine_build_kwargs(args) -> dict:
    return engine_build(getattr(args, "engine_version", None), FLASH_ATTN[getattr(args, "flash_attn", "auto")])


def add_micro_batch_options(p):
    """llama.cpp's -ub and -b: how the prompt is cut into passes (``Workload.prefill_chunks``)."""
    p.add_argument("--ubatch", "-ub", type=positive_int, default=UBATCH,
                   help=f"llama.cpp -ub: prompt tokens per micro-batch, one graph pass (default {UBATCH}; at most "
                        "--batch-size, as llama.cpp clamps it)")
    p.add_argument("--batch-size", "-b", dest="n_batch", type=positive_int, default=NBATCH,
                   help=f"llama.cpp -b: prompt tokens per llama_decode call (default {NBATCH}); not --batch, the "
                        "concurrent sequences")


def add_predict_options(p, batch_max: bool = False):
    add_hardware_options(p)
    add_model_options(p)
    add_engine_build_options(p)
    add_run_options(p, batch_max)
    add_micro_batch_options(p)
    add_scale_options(p)
    p.add_argument("--json", action="store_true", help="print the JSON document instead of a table")


def add_plot_option(p):
    p.add_argument("--plot", metavar="FILE", help="also draw a chart to FILE (.png or .svg)")


def check_plot(args):
    """Fail on a bad --plot path before any work is done."""
    if getattr(args, "plot", None):
        require("plot", "matplotlib", what="--plot")
        check_path(args.plot)


def resolve_hardware(args, name: str | None = None):
    """The device named by --hardware, or a custom one from --bandwidth/--memory, under --driver / --os."""
    hw = _device(args, name)
    numa = getattr(args, "numa", None)
    if numa and not any(d.startswith(f"numa {numa}") for d in hw.derived):
        say(f"--numa {numa} changes nothing on {hw.id}: it spreads the weights over the sockets of a multi-socket "
            "CPU (a catalog CPU with more than one socket)", "note")
    return on_driver(hw, getattr(args, "driver", None), getattr(args, "os", None))


def note_driver(driver: str | None, assumed: str | None) -> None:
    """The stderr note of a driver assumed (no --driver named), as the other assumed inputs have."""
    if driver and assumed:
        say(f"driver assumed: {assumed}", "note")


def _device(args, name: str | None = None):
    """The device named by --hardware, or a custom one from --bandwidth/--memory."""
    name = name if name is not None else args.hardware
    if name and getattr(args, "memory", None) and not getattr(args, "bandwidth", None):
        # a catalog device with another memory size (a Mac of another configuration): --memory overrides it

        hw = _named_hardware(args, name)
        return with_memory(hw, parse_capacity(args.memory, what="memory") / GIB, f"--memory {args.memory}")
    if getattr(args, "bandwidth", None) or getattr(args, "memory", None):
        if name:
            raise UserError("give either --hardware or --bandwidth/--memory, not both",
                            "--memory alone overrides the memory of a --hardware device")
        if not (args.bandwidth and args.memory):
            raise UserError("a custom device needs both --bandwidth and --memory", "e.g. --bandwidth 1008GB/s --memory 24GB")

        return hardware_from_flags(args.bandwidth, args.memory, fp16_tflops=args.tflops or 0.0)
    if not name:
        raise UserError("which hardware?", "add --hardware ID (see `tokspeed hardware`) or --bandwidth and --memory")
    return _named_hardware(args, name)


def _named_hardware(args, name):
    """The --hardware device (a note on stderr when the name was read loosely or was a shared name's default
    variant), with --tflops over the catalog's figure."""
    hw, note = lookup_hardware(name)
    if note:
        say(note, "note")
    hw = with_tflops(hw, getattr(args, "tflops", None))  # --tflops overrides the catalog
    return with_numa(with_threads(hw, getattr(args, "threads", None)), getattr(args, "numa", None))


def predict_kwargs(args) -> dict:
    return dict(quant=args.quant, kv_dtype=args.kv_dtype, engine=args.engine, prompt=args.prompt, gen=args.gen,
                context=args.context, batch=args.batch, **scale_kwargs(args), **engine_build_kwargs(args),
                **{k: getattr(args, k) for k in ("ubatch", "n_batch") if hasattr(args, k)})


def dumps_json(obj, **kw) -> str:
    """The one JSON encoder of --json output: strict JSON, never NaN or Infinity (RFC 8259)."""
    try:
        return json.dumps(obj, allow_nan=False, default=str, **kw)
    except ValueError:
        raise UserError("the result holds a number that is not finite (NaN or infinity)",
                        "an input is out of range; check --bandwidth, --tflops and the hardware file") from None


def print_json(obj, **kw):

    sys.stdout.write(known().text(dumps_json(obj, indent=2, **kw)) + "\n")   # the writer masks known secrets
