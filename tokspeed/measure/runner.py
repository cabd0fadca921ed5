"""One `tokspeed measure` run: load the backend, time every (batch, depth) point, put the
prediction for the same hardware next to each, derive achieved GB/s, MBU and MFU, optionally
fit and store this machine's calibration. Returns the RUN.json dict (``run_file.py``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..hardware.catalog import LOCAL_NAME, get_hardware, local_profile_path
from ..quant.format_table import ftype_name, row as format_row, torch_default
from . import backend_llamacpp as bl, backend_torch as bt
from .calibrate import fit, store_calibration
from .detect import detect
from .mbu import untrusted_bandwidth, utilisation
from .predicted import predict_point
from .run_file import new_run
from .weights import gguf_tensor_shapes


@dataclass
class MeasureOptions:
    model: str
    backend: str = "torch"
    device: str = "cpu"
    quant: str = ""
    contexts: list = field(default_factory=lambda: [0, 512, 2048])
    batches: list = field(default_factory=lambda: [1])
    prompt: int = 512
    gen: int = 32
    warmup: int = 2
    seed: int = 0
    threads: int | None = None   # llama.cpp threads (torch: set by the caller with torch.set_num_threads)
    flash_attention: bool = False   # llama.cpp: run the context with FlashAttention (llama-cpp-python: off)

    def __post_init__(self):
        """Checked at once, before any library is imported or model loaded (the library's words: field names)."""
        if self.gen < 5:
            raise UserError(f"gen must be at least 5 (the decode steps are the repeats), got {self.gen}")
        if not self.contexts or any(c < 0 for c in self.contexts) or not self.batches or any(b < 1 for b in self.batches):
            raise UserError("contexts must be >= 0 and batches >= 1")
        if self.prompt < 0:
            raise UserError(f"prompt must be >= 0, got {self.prompt}")


def resolve_hardware(name: str):
    """(Hardware, profile path or None). ``local`` is the probed profile (hardware.catalog.local_profile_path)."""
    hw = get_hardware(name)
    p = local_profile_path() if name.strip().lower() == LOCAL_NAME else Path(name).expanduser()
    return hw, (p if p.is_file() else None)


def gguf_quant_name(path) -> str:
    """The file type llama.cpp recorded (``general.file_type``) as a --quant name (Q4_K_M, F16 ...)."""
    from gguf import LlamaFileType  # lazy: optional dependency (gguf, the files extra)


    meta, _ = gguf_tensor_shapes(path)
    ft = meta.get("general.file_type")
    try:
        name = LlamaFileType(int(ft)).name
    except (TypeError, ValueError):
        return ftype_name(0)     # LLAMA_FTYPE_ALL_F32: a file that records no (known) file type
    return name.replace("MOSTLY_", "").replace("ALL_", "")


def derive_rates(point: dict, hw, quant: str, untrusted: str = "") -> dict:
    """Achieved GB/s, MBU (of the profile's bandwidth; None with ``mbu_unreliable`` where it is no measurement:
    ``tokspeed.measure.mbu``) and MFU (of its fp32 or fp16 TFLOP/s) of a point."""
    step_s = point["batch"] / point["decode_tok_s"]
    gbps = point["bytes_per_step"] / step_s / 1e9
    fmt = format_row(quant)
    fp32 = fmt is not None and fmt.bits == 32       # 32-bit weights run on the FP32 units
    peak = (hw.fp32_tflops if fp32 else hw.fp16_tflops or hw.fp32_tflops) * 1e12
    point["achieved_gbps"] = gbps
    point["mbu"], why = utilisation(gbps, hw.bandwidth_gbps, untrusted)
    if why:
        point["mbu_unreliable"] = why
    point["mfu"] = point["flops_per_step"] / step_s / peak if peak else None
    return point


def measure(opts: MeasureOptions, hw, progress=None, profile: dict | None = None) -> dict:
    """Time every point; ``progress(advance)`` is called after each decode step. ``profile``: the probed
    hardware profile ``hw`` came from (its bandwidth probe's spread decides whether MBU is shown)."""
    machine = detect()
    warnings = []
    max_seq = max(opts.contexts) + max(opts.prompt, opts.gen + opts.warmup) + 1
    step = (lambda: progress(1)) if progress else None
    if opts.backend == "torch":
        import torch  # lazy: optional dependency (torch, the measure extra)

        quant = (opts.quant or torch_default(opts.device)).upper()
        lm = bt.load_model(opts.model, opts.device, quant, max_seq, max(opts.batches), opts.prompt, opts.seed)
        for b in opts.batches:   # untimed: first calls build kernels/primitives for each shape
            bt.measure_point(lm, b, 0, min(opts.prompt, 16), 5, opts.warmup, opts.seed)
        points = [bt.measure_point(lm, b, c, opts.prompt, opts.gen, opts.warmup, opts.seed, step)
                  for b in opts.batches for c in opts.contexts]
        spec, counted, threads, flash = lm.spec, bt.counted_text(lm), torch.get_num_threads(), None
        engine = bt.engine_version(torch)
        model = {"id": spec.id, "source": lm.source, "path": lm.path, "n_params": spec.n_params}
    elif opts.backend == "llama.cpp":
        if opts.batches != [1]:
            warnings.append("llama.cpp backend: batch sizes other than 1 are not measured (single sequence)")
        quant = gguf_quant_name(opts.model) if Path(opts.model).suffix == ".gguf" else (opts.quant or "?")
        lm = bl.load_llama(opts.model, max_seq, opts.threads, opts.flash_attention)
        bl.measure_point(lm, 0, min(opts.prompt, 16), 5, opts.warmup, opts.seed)   # untimed warm-up
        points = [bl.measure_point(lm, c, opts.prompt, opts.gen, opts.warmup, opts.seed, step) for c in opts.contexts]
        spec, counted, threads = lm.spec, bl.COUNTED, lm.threads
        flash = lm.flash_attention
        import llama_cpp  # lazy: optional dependency (llama_cpp, the llamacpp extra)

        engine = bl.engine_version(llama_cpp)
        model = {"id": spec.id, "source": "gguf", "path": lm.path, "n_params": spec.n_params}
    else:
        raise UserError(f"unknown backend {opts.backend!r}", "use torch or llama.cpp")
    # MFU of what the engine computes on: llama.cpp's CPU kernels run FP32 SIMD / int8, not a probe's BF16 figure
    rated = hw.simd_view() if opts.backend == "llama.cpp" else hw
    untrusted = untrusted_bandwidth(profile)
    points = [derive_rates(p, rated, quant, untrusted) for p in points]
    if any(p["mbu"] is None for p in points):
        warnings.append("MBU not shown: " + next(p["mbu_unreliable"] for p in points if p["mbu"] is None))
    for p in points:
        if p["decode_step"]["unstable"]:
            warnings.append(f"batch {p['batch']} depth {p['context']}: decode steps spread "
                            f"{p['decode_step']['spread']:.0%} of the median (> 10 %): the machine was busy?")
    state = machine.to_dict()
    try:   # what else the machine was doing (pyperf records the same): 1/5/15-minute load average
        state["load_average"] = list(os.getloadavg())
    except (AttributeError, OSError):
        pass
    run = new_run(
        machine=state,
        hardware={"id": hw.id, "name": hw.name, "bandwidth_gbps": hw.bandwidth_gbps, "fp16_tflops": hw.fp16_tflops,
                  "fp32_tflops": hw.fp32_tflops},
        model=model, backend=opts.backend, device=opts.device, quant=quant,
        settings={"contexts": opts.contexts, "batches": opts.batches, "prompt": opts.prompt, "gen": opts.gen,
                  "threads": threads, "warmup": opts.warmup,
                  **({"flash_attention": flash} if flash is not None else {})},
        counted=counted + f"; MBU = bytes per step / step time / {hw.bandwidth_gbps:g} GB/s (hardware {hw.id})",
        points=points, warnings=warnings, **engine)
    run["_spec"] = spec   # dropped before writing
    return run


def add_predictions(run: dict, hw, calibration=None) -> dict:
    """Set ``predicted`` and ``error_pct`` (predicted vs measured decode tok/s) on every point."""
    # llama.cpp runs the file's own quant mix: the core reads its exact tensor bytes from the GGUF
    spec = run["model"]["path"] if run["backend"] == "llama.cpp" else run["_spec"]
    for p in run["points"]:
        pred = predict_point(spec, hw, run["backend"], run["quant"], p["context"], p["gen"], p["batch"],
                             p["prompt"], calibration, run.get("settings", {}).get("flash_attention"))
        p["predicted"] = pred
        p["error_pct"] = (pred["tok_s"] - p["decode_tok_s"]) / p["decode_tok_s"] * 100
    run["calibration"] = calibration.to_dict() if calibration else None
    return run


def calibrate_run(run: dict, hw, profile_path) -> object:
    """Fit (eta, overhead) over the run's points, store it in the profile, return it."""
    if profile_path is None:
        raise UserError("`calibrate` stores the fit in a probed hardware profile",
                        "use hardware='local' (after `tokspeed probe`) or hardware='PROFILE.toml'", field="calibrate")
    # the median step: a step in which another process took the core says nothing about this machine
    # the attention traffic the engine model adds beyond one read of the cache (re-reads, unfused scores) counts
    # as KV traffic: eta_kv comes out net of the run's attention, so it holds for either attention
    # and the time the model gives the attention's compute beyond its memory side comes off the step: the fit is
    # of the step's memory time
    pts = [(q["bytes_per_step"] + x, p["decode_step"]["median_s"] - q.get("attn_compute_excess_s", 0.0),
            q["kv_bytes_per_step"] + x)
           for p in run["points"] for q in (p["predicted"],) for x in (q.get("attn_extra_bytes_per_step", 0.0),)]
    cal = fit(pts, hw.bandwidth_gbps, run["backend"], fitted_on=f"{run['model']['id']} {run['quant']} depths "
              + ",".join(str(c) for c in run["settings"]["contexts"]),
              flash_attention=run["settings"].get("flash_attention"), attention_net=True,
              attention_compute_net=True)
    store_calibration(profile_path, cal)
    return cal


def finished(run: dict) -> dict:
    run = dict(run)
    run.pop("_spec", None)
    return run
