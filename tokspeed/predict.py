"""Prediction: memory budget, bytes per token, decode and prefill speed, time to first token.

One prediction runs five steps, each a small function below:

    resolve  -> the model (spec + weight storage), the device, the engine profile, the timer
    memory   -> weights + KV cache + activations + runtime against capacity (``tokspeed.memory``)
    decode   -> mean step time over the generated tokens, in closed form over KV depth
    prefill  -> the prompt's micro-batches (``Workload.prefill_chunks``)
    assemble -> ``Prediction`` (+ the scale sections: devices, parallel, offload, serving, cost)

Every pass is timed by the roofline of ``tokspeed.timing`` over the operator ledger of
``tokspeed.ledger``; the ``ideal`` engine gives the bound (for decode the seeds' formula
``bandwidth / (weight bytes + KV bytes)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .engines.bands import question_of, stated_pct
from .engines.profile import IDEAL, EngineProfile
from .attended import depth_kinks
from .ledger import Op, forward_ops
from .memory import Memory, edge_of_memory, memory_budget, memory_fill
from .models import window as trained_window
from .prediction_setup import Resolved, resolve
from .quant.kv import kv_bytes as kv_dtype_bytes
from .scale.layout import one_device_input
from .scale.options import ScaleOptions
from .scale.parallel import ROW_SPLIT_PREFILL, buffer_prompt
from .scale.sections import scale_sections
from .scale.timing import pipelined_s, pipelines_prompt, split_in_turn
from .serving.fitted import constants_note, engine_seconds, predict_constants
from .timing import PassTime, depth_sum
from .workload import DEFAULT_ENGINE, DEFAULT_GEN, DEFAULT_PROMPT, NBATCH, UBATCH, Workload

if TYPE_CHECKING:
    from .hardware.spec import Hardware
    from .models.spec import ModelSpec
    from .quant.storage import WeightStorage
    from .scale.layout import Layout

MAX_SAMPLES = 33   # the sampled decode steps of ``decode_steps`` (kept for the numpy fit, calibration.fast)


@dataclass
class Decode:
    bytes_per_token: float
    weight_bytes_per_token: float
    kv_bytes_per_token: float
    bound_tok_s: float
    tok_s: float
    ms_per_token: float
    bound: str
    tok_s_low: float = 0.0
    tok_s_high: float = 0.0
    aggregate_tok_s: float = 0.0
    time_shares: dict = field(default_factory=dict)   # the first step's time by what bounds it: compute,
    #                                                    memory, overhead (launches + per-step cost), link

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Prefill:
    tok_s: float | None       # None when the device has no published FLOP/s figure
    seconds: float | None
    bound: str
    bound_tok_s: float = 0.0
    tok_s_low: float = 0.0
    tok_s_high: float = 0.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Prediction:
    model: str
    hardware: str
    quant: str
    kv_dtype: str
    engine: str
    batch: int
    prompt: int
    gen: int
    context: int
    memory: Memory
    decode: Decode
    prefill: Prefill
    ttft_s: float | None
    engine_source: str = ""
    engine_version: str | None = None
    flash_attention: bool | None = None      # llama.cpp: attention fused (FlashAttention) or not
    spec: ModelSpec | None = field(default=None, repr=False)
    hw: Hardware | None = field(default=None, repr=False)
    storage: WeightStorage | None = field(default=None, repr=False)
    engine_profile: EngineProfile | None = field(default=None, repr=False)
    layout: Layout | None = field(default=None, repr=False)
    ttft_lead_tokens: float = 0.0       # decode steps in ttft_s before a streaming client's first text (server engines)
    devices: dict = field(default_factory=dict)                 # scale sections (tokspeed.scale.sections)
    parallel: dict = field(default_factory=dict)
    offload: dict | None = None
    serving: dict | None = None
    cost: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)   # e.g. a context past the trained window
    quant_assumed: str | None = None   # no format named: which one was assumed and why (None: named)
    driver: str | None = None          # the GPU driver the backend runs under (engines.driver; None: no choice)
    driver_assumed: str | None = None  # no driver named: which one was assumed and why
    band_in_turn: tuple = field(default=(), repr=False)   # kinds whose passes run a layer split in turn (in_turn_kinds)
    band_fill: float | None = field(default=None, repr=False)   # the fullest device's share (band_fill: the edge cell)

    @property
    def hypothetical(self) -> bool:
        """The setup does not fit memory: the numbers say what it would do if it did."""
        return not self.memory.fits

    @property
    def extra(self) -> dict:
        """The scale sections as the JSON has them (devices, parallel, offload, serving, cost)."""
        out = {"devices": self.devices, "parallel": self.parallel}
        if self.offload is not None:
            out["offload"] = self.offload
        if self.serving is not None:
            out["serving"] = self.serving
        out["cost"] = self.cost
        return out

    def to_dict(self) -> dict:
        return {
            "model": self.model, "hardware": self.hardware, "quant": self.quant, "quant_assumed": self.quant_assumed,
            "kv_dtype": self.kv_dtype,
            "engine": self.engine, "engine_version": self.engine_version, "driver": self.driver,
            "driver_assumed": self.driver_assumed,
            "flash_attention": self.flash_attention, "batch": self.batch,
            "prompt": self.prompt, "gen": self.gen, "context": self.context, "memory": self.memory.to_dict(),
            "hypothetical": self.hypothetical, "decode": self.decode.to_dict(), "prefill": self.prefill.to_dict(),
            "ttft_s": self.ttft_s, "ttft_lead_tokens": self.ttft_lead_tokens, "engine_source": self.engine_source,
            **self.extra,
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }

    def decode_ops(self, depth: int | None = None) -> list[Op]:
        """The ledger of one decode step at a KV depth (default: the first generated token's)."""
        d = self.context + self.prompt if depth is None else depth
        return forward_ops(self.spec, self.storage, kv_dtype_bytes(self.kv_dtype), self.batch, 1, d)


def decode_steps(context: int, prompt: int, gen: int) -> list[tuple[int, float]]:
    """(depth, weight) pairs of ``MAX_SAMPLES`` evenly spaced decode steps whose weighted sum approximates
    the total time of ``gen`` steps (trapezoid; exact when the step time is affine in depth). ``predict``
    sums the steps in closed form instead (``timing.depth_sum``); the numpy fit (``calibration.fast``)
    still samples."""
    start = context + prompt
    if gen <= MAX_SAMPLES:
        return [(start + i, 1.0) for i in range(gen)]
    n = MAX_SAMPLES
    pts = [round(i * (gen - 1) / (n - 1)) for i in range(n)]
    out = []
    for j, p in enumerate(pts):
        left = (p - pts[j - 1]) / 2 if j else 0.5
        right = (pts[j + 1] - p) / 2 if j < n - 1 else 0.5
        out.append((start + p, left + right))
    return out


# -- the five steps --------------------------------------------------------------------------------

def memory(r: Resolved, work: Workload) -> Memory:
    """The memory budget (memory.memory_budget); the largest context never exceeds the model's trained window."""
    if r.setup is not None:
        mem = r.setup.memory
    else:
        off_device, host = one_device_input(r.spec, r.storage, r.profile, r.hw)
        mem = memory_budget(r.spec, r.weights_bytes - off_device, r.kv_elem_bytes, work.batch, work.tokens,
                            buffer_prompt(r.profile, work.prompt, work.tokens, work.micro_batch),
                            r.profile.runtime_overhead_gib * 2**30, r.hw.usable_bytes, ubatch=work.micro_batch,
                            host_bytes=host)
    window = r.spec.max_context
    if window and mem.max_context > window:
        mem = replace(mem, max_context=window)
    return mem


def decode(r: Resolved, work: Workload, fill: float | None = None) -> tuple[Decode, PassTime]:
    """Decode: the mean step time over the ``gen`` generated tokens (and the first step's pass)."""
    spec, storage, kvb, B = r.spec, r.storage, r.kv_elem_bytes, work.batch
    first, n = work.decode_first, work.decode_steps
    kinks = depth_kinks(spec)
    passes: dict = {}
    ledgers: dict = {}

    def step(engine, fit=None):
        def at(depth):
            ops = ledgers.get(depth)
            if ops is None:
                ops = ledgers[depth] = forward_ops(spec, storage, kvb, B, 1, depth)
            pt = r.timer(ops, engine, B, 1)
            passes[engine.name, depth] = pt
            return served_s(pt, pt.seconds, fit)
        return at

    fit = serving_fit(r)
    step_s = depth_sum(step(r.profile, fit), first, n, kinks) / n
    ideal_s = depth_sum(step(IDEAL), first, n, kinks) / n
    pt0 = passes[r.profile.name, first]
    # bytes the device reads from its memory (the logits' trip to the CPU is not one of them)
    cpu = [o for o in ledgers[first] if o.unit == "cpu"]
    band = fitted_band(fit, "tpot") or stated_pct(r.profile, "decode", **question_of(
        r.spec, r.quant, work.context, r.scale.gpus, in_turn_kinds(r, work), fill)) / 100
    tok_s = 1 / step_s               # per sequence: one token for each of the batch every step
    bound_tok_s = 1 / ideal_s
    return Decode(bytes_per_token=(pt0.bytes - sum(o.bytes for o in cpu)) / B,
                  weight_bytes_per_token=(pt0.weight_bytes - sum(o.weight_bytes for o in cpu)) / B,
                  kv_bytes_per_token=(pt0.kv_bytes - sum(o.kv_read_bytes + o.kv_write_bytes for o in cpu)) / B,
                  bound_tok_s=bound_tok_s, tok_s=tok_s, ms_per_token=step_s * 1e3, bound=pt0.bound,
                  tok_s_low=band_low(tok_s, band), tok_s_high=band_high(tok_s, band, bound_tok_s),
                  aggregate_tok_s=B * tok_s, time_shares=time_shares(pt0)), pt0


def time_shares(pt: PassTime) -> dict:
    """A pass's time split by what bounds it (the shares ``PassTime.bound`` picks the largest of)."""
    parts = {"compute": pt.compute_s, "memory": pt.memory_s, "overhead": pt.overhead_s, "link": pt.link_s}
    total = sum(parts.values()) or 1.0
    return {k: v / total for k, v in parts.items()}


def serving_fit(r: Resolved) -> dict | None:
    """The serving simulator's fitted constants for this engine on this device's vendor (``serving.fitted``), or
    None where it has none: a server engine's single stream is then the simulator's concurrency 1."""
    return fit_of(r.profile, r.hw, r.setup.layout if r.setup else None)


def fit_of(profile, hw, layout) -> dict | None:
    """``serving_fit`` of an engine profile on a device under a layout (None: one device)."""
    return predict_constants(profile.name, hw.vendor, layout.parallel.pp if layout is not None else 1)


def fitted_band(fit: dict | None, kind: str) -> float | None:
    """The serving fit's held-out p90 error of ``kind`` (tpot, ttft) as a band fraction; None without one."""
    pct = (fit or {}).get(f"{kind}_error_pct")
    return None if pct is None else pct / 100


def served_s(pt: PassTime, seconds: float, fit: dict | None) -> float:
    """A pass's ``seconds`` as the engine runs it under the serving constants ``fit`` (unchanged without)."""
    if fit is None:
        return seconds
    return engine_seconds(seconds, fit["gpu_scale"], fit["step_s"], pt.link_s, fit["link_scale"])


def served_timer(timer, profile, fit: dict | None):
    """``timer`` with the engine's passes (not the ideal bound's) under the serving constants ``fit``: the scale
    sections' decode steps (users, batch curve, ``--rate``) as ``decode`` times them."""
    if fit is None:
        return timer

    def timed(ops, engine, batch, n_tokens):
        pt = timer(ops, engine, batch, n_tokens)
        return pt if engine is not profile else replace(pt, seconds=served_s(pt, pt.seconds, fit))
    return timed


def prefill_passes(spec, storage, kvb: float, work: Workload, ubatch: int | None = None):
    """(ops, depth, tokens) of each prefill micro-batch: the ledger of every pass the prompt takes (``ubatch``:
    tokens per pass, default the run's -ub / -b, ``Workload.micro_batch``)."""
    for depth, chunk in work.prefill_chunks(ubatch):
        yield forward_ops(spec, storage, kvb, work.batch, chunk, depth), depth, chunk


def prefill(r: Resolved, work: Workload, fill: float | None = None) -> Prefill:
    """Prefill of the prompt in micro-batches; unknown without a FLOP/s figure for the device."""
    if not work.prompt:
        return Prefill(tok_s=0.0, seconds=0.0, bound="none")
    if not r.hw.matmul_flops:
        # no FLOP/s figure for this device (e.g. Apple M3/M4: Apple publishes none): prefill is
        # compute bound, so any number would be invented. Say so instead.
        return Prefill(tok_s=None, seconds=None, bound="unknown (no FLOP/s figure for this device)")
    seconds = ideal = 0.0
    bounds = {"compute": 0.0, "memory": 0.0, "overhead": 0.0}
    pipe = pipelines_prompt(r.setup.layout if r.setup else None, r.profile)
    fit = serving_fit(r)                    # a server engine: its scheduler's token budget per step
    ubatch = fit["token_budget"] if fit else None
    for ops, depth, chunk in prefill_passes(r.spec, r.storage, r.kv_elem_bytes, work, ubatch):
        first = not pipe or work.starts_call(depth)        # a new llama_decode call refills the pipeline
        pt = r.timer(ops, r.profile, work.batch, chunk)
        s = served_s(pt, pipelined_s(pt, first), fit)
        seconds += s
        ideal += pipelined_s(r.timer(ops, IDEAL, work.batch, chunk), first)
        bounds[pt.bound] = bounds.get(pt.bound, 0.0) + s
    tok_s = work.batch * work.prompt / seconds
    band = fitted_band(fit, "ttft") or stated_pct(r.profile, "prefill", **question_of(
        r.spec, r.quant, work.context, r.scale.gpus, in_turn_kinds(r, work), fill)) / 100
    bound_tok_s = work.batch * work.prompt / ideal
    return Prefill(tok_s=tok_s, seconds=seconds, bound=max(bounds, key=bounds.get),
                   bound_tok_s=bound_tok_s, tok_s_low=band_low(tok_s, band),
                   tok_s_high=band_high(tok_s, band, bound_tok_s))


def in_turn_kinds(r, work: Workload) -> tuple[str, ...]:
    """The kinds (decode, prefill) whose passes run the answer's layer split in turn (``scale.timing.split_in_turn``:
    the fit takes such rows, so their band adds no multi-device term); a prompt pipelines where the layout does and
    it has more than one micro-batch."""
    layout = r.setup.layout if r.setup else None
    if layout is None or len(layout.stages) < 2:
        return ()                         # one device: nothing to run in turn
    fit = serving_fit(r)
    pipelined = pipelines_prompt(layout, r.profile) and work.splits_prompt(fit["token_budget"] if fit else None)
    return tuple(k for k, pipe in (("decode", False), ("prefill", pipelined))
                 if split_in_turn(layout, r.profile, work.batch, pipe))


def band_low(tok_s: float, band: float) -> float:
    """The bottom of the error band: the slowest measurement within ``band`` of the prediction (the band covers
    predicted / measured and measured / predicted up to 1 + band, ``stats.band_error_pct``, the error every band is
    fitted on): ``tok_s / (1 + band)``, above 0 however wide."""
    return tok_s / (1 + band)


def band_high(tok_s: float, band: float, bound_tok_s: float) -> float:
    """The top of the error band: the fastest measurement within ``band`` of the prediction (the same error as
    ``band_low``): ``tok_s x (1 + band)``; never above the ideal bound (no engine beats the roofline; the band is the
    fitted error, not a licence to), and never below ``tok_s``."""
    return max(tok_s, min(tok_s * (1 + band), bound_tok_s))


def assemble(r: Resolved, work: Workload, mem: Memory, dec: Decode, first: PassTime, pre: Prefill,
             fill: float | None = None) -> Prediction:
    notes = []
    window = r.spec.max_context
    if not trained_window.within(window, work.context, work.prompt, work.gen):
        notes.append(f"{r.spec.id} was trained for {window:,} tokens of context; this run reaches "
                     f"{work.tokens:,} (context + prompt + gen): the numbers assume the engine extends the window "
                     "(RoPE scaling)")
    # a device whose file states no arch: the engine rules read the one its name implies -- said, not silent
    notes += [f"hardware {r.hw.id}: {d}" for d in r.hw.derived if d.startswith("arch: ") and "ASSUMED" in d]
    layout = r.setup.layout if r.setup else None
    # (an offload fills the GPU to the edge by this budget on purpose: its layer count says so)
    devices = ([] if layout is not None and layout.offload != "none" else
               [(d.name, d.total_bytes, d.capacity_bytes) for d in r.setup.devices if d.kind == "gpu"] if r.setup
               else [(r.hw.id, mem.total_bytes, mem.capacity_bytes)])
    notes += filter(None, [edge_of_memory(devices, r.profile.runtime_overhead_gib * 2**30)])
    if layout is not None and layout.row_split and work.prompt:
        notes.append(ROW_SPLIT_PREFILL)
    fit = serving_fit(r)
    sections = scale_sections(replace(r, timer=served_timer(r.timer, r.profile, fit)), mem, dec, pre, first, work)
    # a server engine samples the first token in the step that ends the prompt; a streaming client sees text
    # ``lead_tokens`` decode steps later (serve's TTFT: serving.metrics.client_view)
    ttft = None if pre.seconds is None else pre.seconds + (0.0 if fit else r.profile.fixed_s)
    lead = min((fit or {}).get("lead_tokens", 0.0), max(work.gen - 1, 0))    # a reply of fewer: text at its end
    if ttft is not None and lead and dec.ms_per_token:
        ttft += lead * dec.ms_per_token / 1e3
    source = r.profile.source + (f"; {constants_note(fit)}" if fit else "")
    return Prediction(model=r.spec.id, hardware=r.hw.id, quant=r.quant, kv_dtype=r.kv_dtype, engine=r.profile.name,
                      batch=work.batch, prompt=work.prompt, gen=work.gen, context=work.context, memory=mem,
                      decode=dec, prefill=pre, ttft_s=ttft, engine_source=source,
                      engine_version=getattr(r.profile, "version", None),
                      flash_attention=getattr(r.profile, "flash_attention", None), spec=r.spec, hw=r.hw,
                      storage=r.storage,
                      engine_profile=r.profile, layout=r.setup.layout if r.setup else None, warnings=notes,
                      ttft_lead_tokens=lead if ttft is not None and dec.ms_per_token else 0.0,
                      quant_assumed=r.quant_assumed, driver=getattr(r.profile, "driver", "") or None,
                      driver_assumed=getattr(r.profile, "driver_assumed", None),
                      band_in_turn=in_turn_kinds(r, work), band_fill=fill, **sections)


def predict(model, hardware, quant: str | None = None, kv_dtype: str = "f16", engine: str = DEFAULT_ENGINE,
            prompt: int = DEFAULT_PROMPT, gen: int = DEFAULT_GEN, context: int = 0, batch: int = 1, *,
            gpus: int = 1, parallel: str | None = None, gpu_layers: int | None = None, offload: str = "none",
            users: int | None = None, rate: float | None = None, price_per_hour: float | None = None,
            cpu=None, engine_version: str | None = None, flash_attention: bool | None = None,
            ubatch: int = UBATCH, n_batch: int = NBATCH) -> Prediction:
    """Predict for ``model`` (catalog id, ModelSpec, config/GGUF path) on ``hardware`` (id, Hardware, TOML).

    Scale options (``tokspeed.scale``): ``gpus``/``parallel`` (tp, pp, split, tp=4,pp=2), ``gpu_layers`` /
    ``offload`` (none, auto, layers, stream) with ``cpu`` the host memory system, ``users`` / ``rate``
    (requests/s) for serving, ``price_per_hour`` (USD for the whole setup) for cost per token.
    ``engine_version``: a llama.cpp build (``b6000``) or a year-month (``2025-08``) the engine profile is for;
    ``flash_attention``: llama.cpp's ``-fa on|off`` (None: the default of that build and front end);
    ``ubatch`` / ``n_batch``: llama.cpp's ``-ub`` / ``-b``, the prompt's micro-batches (``Workload``)."""
    work = Workload(prompt=prompt, gen=gen, context=context, batch=batch, ubatch=ubatch, n_batch=n_batch)
    scale = ScaleOptions(gpus=gpus, parallel=parallel, gpu_layers=gpu_layers, offload=offload, cpu=cpu,
                         users=users, rate=rate, price_per_hour=price_per_hour)
    return predict_workload(resolve(model, hardware, quant, kv_dtype, engine, engine_version, scale, work,
                                    flash_attention), work)


def predict_workload(r: Resolved, work: Workload) -> Prediction:
    """A prediction for an already resolved setup (``sweep`` resolves once and varies the workload)."""
    mem = memory(r, work)
    fill = band_fill(r, mem)
    dec, first = decode(r, work, fill)
    return assemble(r, work, mem, dec, first, prefill(r, work, fill), fill)


def band_fill(r: Resolved, mem: Memory) -> float | None:
    """The share of its fullest device's memory the run takes (``memory.memory_fill``: the band's edge-of-memory
    cell); None with layers or weights on the host (an ``--offload`` that leaves every layer on the GPU has none)."""
    layout = r.setup.layout if r.setup else None
    on_host = layout is not None and layout.offload != "none" and not (
        layout.offload == "layers" and (layout.gpu_layers or 0) >= r.spec.n_layers + 1)
    devices = [(d.total_bytes, d.capacity_bytes) for d in r.setup.devices if d.kind == "gpu"] if r.setup else []
    return memory_fill(mem, devices, on_host)


def sweep(model, hardware, contexts, batches=(1,), quants=(None,), *, prompt: int = 0, gen: int = 1,
          kv_dtype: str = "f16", engine: str = DEFAULT_ENGINE, engine_version: str | None = None,
          flash_attention: bool | None = None, **scale) -> list[Prediction]:
    """Predictions over every (quant, batch, context) of the grid, in that nesting order. The model,
    device and engine are resolved once per quant (once per quant and batch with a scale layout)."""
    opts = ScaleOptions(**scale)
    out = []
    for q in quants:
        r = None
        for b in batches:
            for c in contexts:
                work = Workload(prompt=prompt, gen=gen, context=c, batch=b)
                if r is None or opts.wants_layout:
                    r = resolve(model, hardware, q, kv_dtype, engine, engine_version, opts, work, flash_attention)
                out.append(predict_workload(r, work))
    return out


__all__ = ["predict", "Prediction", "Decode", "Prefill", "Workload", "sweep", "decode_steps", "UBATCH",
           "op_time", "pass_time", "PassTime"]
