"""The first step of a prediction: what it is about, resolved once (``Resolved``): the model and its weights,
the device, the engine profile, and the timer of its passes (the roofline of ``tokspeed.timing``, or a
``scale.timing.LayoutTimer`` when the scale options ask for a layout).

It sits below ``predict`` so that the serving simulation (``tokspeed.serving``) and ``predict --batch max``
resolve a setup without importing the prediction that is built on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .derived import derived
from .engines import profile as _profile
from .engines.compat import runnable
from .engines.default_format import default_quant
from .engines.profile import EngineProfile, attention_spec, get_engine
from .hardware.catalog import get_hardware
from .hardware.spec import Hardware
from .ledger import resident_weight_bytes
from .quant.format_key import format_key
from .quant.kv import kv_bytes as kv_dtype_bytes
from .quant.schemes import canonical, scheme_for
from .resolve import resolve_model
from .scale.configure import configure
from .scale.options import ScaleOptions
from .scale.parallel import buffer_prompt
from .scale.timing import LayoutTimer
from .serving.gemm_device import gemm_hardware
from .serving.kernel_efficiency import kernel_profile
from .timing import RooflineTimer, Timer
from .workload import Workload

if TYPE_CHECKING:
    from .models.spec import ModelSpec
    from .quant.storage import WeightStorage
    from .scale.configure import ScaleSetup


@dataclass
class Resolved:
    """What a prediction is about, resolved once: model, weights, device, engine, how passes are timed."""
    spec: ModelSpec           # as the engine runs it
    storage: WeightStorage    # a quant scheme or a real file
    quant: str
    kv_dtype: str
    kv_elem_bytes: float
    hw: Hardware
    profile: EngineProfile
    scale: ScaleOptions
    setup: ScaleSetup | None = None   # when the options ask for a layout
    timer: Timer | None = None
    weights_bytes: float = 0.0
    quant_assumed: str | None = None  # why this format, when none was named (``engines.default_format``)



def resolve(model, hardware, quant: str | None, kv_dtype: str, engine, engine_version: str | None,
            scale: ScaleOptions, work: Workload, flash_attention: bool | None = None) -> Resolved:
    """Model, weights, device and engine; the layout when the scale options ask for one."""
    spec, storage = resolve_model(model)
    if isinstance(hardware, Hardware):
        hw = hardware
    else:
        hw = get_hardware(hardware)
    prof = _engine(engine, hw, engine_version, flash_attention)
    assumed = None
    if storage is None:
        if not quant:            # the format people run: released (servers) or downloaded (llama.cpp)

            quant, assumed = default_quant(spec, prof, hw)
        quant = canonical(quant)
        storage = scheme_for(quant, spec)
    else:
        quant = getattr(storage, "name", "file")
    kvb = kv_dtype_bytes(kv_dtype)
    spec = attention_spec(prof, spec)            # e.g. llama.cpp runs Mistral v0.1 with full attention
    prof, hw = _runnable(prof, hw, quant, kv_dtype, spec)  # refuse what cannot run; a SoC's CPU for llama.cpp-cpu
    hw = _gemm_hardware(hw, quant, prof.name)    # a server engine's FP8 checkpoint: FP8 GEMMs, as serve runs them
    prof = kernel_profile(prof, hw, quant)        # a server engine's kernels by path (serving.kernel_efficiency)
    quant = format_key(quant)                     # parsed once: its kernel group rides along (quant.format_key)
    # a real file may hold tensors no decoder role reads (a vision tower, rope tables): resident all the same
    weights = resident_weight_bytes(spec, storage) + getattr(storage, "unmodelled_bytes", 0)
    r = Resolved(spec, storage, quant, kv_dtype.lower(), kvb, hw, prof, scale, weights_bytes=weights,
                 quant_assumed=assumed)
    if scale.wants_layout:
        r.setup = configure(spec, storage, hw, prof, kvb, work.batch, work.tokens,
                            buffer_prompt(prof, work.prompt, work.tokens, work.micro_batch),
                            prof.runtime_overhead_gib * 2**30, gpus=scale.gpus, parallel=scale.parallel,
                            gpu_layers=scale.gpu_layers, offload=scale.offload, cpu=scale.cpu,
                            ubatch=work.micro_batch)
        r.timer = LayoutTimer(r.setup.layout, spec, quant)
    else:
        r.timer = _roofline_timer(hw, quant)
    return r


_TIMERS: dict = {}
_ENGINES: dict = {}


def _engine_tables():
    """The loaded engine tables (``engines.profile``'s cached read of priors + fit), or None."""
    tables = getattr(_profile, "_tables", None)
    return tables() if callable(tables) else None


def _calibration_key(hw) -> tuple:
    """A device's machine calibration as a value ((): none, the usual case)."""
    cal = getattr(hw, "calibration", None)
    if not cal:
        return ()
    return tuple(sorted((k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in cal.items()))


def _engine(engine, hw, version, flash_attention=None) -> EngineProfile:
    """``get_engine``, remembered per (name, device, version, attention): profiles are read-only."""
    if isinstance(engine, EngineProfile):
        return get_engine(engine, hw, version=version, flash_attention=flash_attention)
    tables = _engine_tables()          # a reloaded engine table (tests, a refit) starts afresh
    # values: a frozen Hardware hashes once (tokspeed.derived); its machine calibration is not part of its value
    # (``Hardware.calibration``, compare=False) but changes the engine (``engines.profile.calibrated``)
    key = (engine, hw, version, flash_attention, _calibration_key(hw))
    hit = _ENGINES.get(key)
    if hit is None or hit[0] is not tables:
        if len(_ENGINES) > 1024:
            _ENGINES.clear()
        hit = _ENGINES[key] = (tables, get_engine(engine, hw, version=version, flash_attention=flash_attention))
    return hit[1]


def _runnable(prof, hw, quant, kv_dtype, spec):
    """``engines.compat.runnable``: the (profile, device) pair the engine runs as, made once per engine profile (kept
    on it, ``tokspeed.derived``) and device, format, KV dtype and model values; a refusal is raised every time."""
    views = derived(prof).setdefault("runnable", {})
    key = (hw, quant, kv_dtype, spec)
    pair = views.get(key)
    if pair is None:
        pair = runnable(prof, hw, quant, kv_dtype, spec)
        if len(views) > 256:
            views.clear()
        views[key] = pair
    return pair


_GEMM_HW: dict = {}


def _gemm_hardware(hw, quant, engine_name: str):
    """``serving.gemm_device.gemm_hardware``, made once per device value, format and engine; a device already at its
    FP8 rate (``serve`` passes one) is kept as it is."""
    key = (hw, quant, engine_name)
    view = _GEMM_HW.get(key)
    if view is None:
        if len(_GEMM_HW) > 256:
            _GEMM_HW.clear()
        g = gemm_hardware(hw, quant, engine_name)
        view = _GEMM_HW[key] = hw if g.fp16_tflops == hw.fp16_tflops else g
    return view


def _roofline_timer(hw, quant) -> RooflineTimer:
    """One timer per device value and format, reused across predictions."""
    key = (hw, quant)
    t = _TIMERS.get(key)
    if t is None:
        if len(_TIMERS) > 256:
            _TIMERS.clear()
        t = _TIMERS[key] = RooflineTimer(hw, quant)
    return t
