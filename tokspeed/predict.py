"""Prediction: memory fit, bytes per token, decode and prefill speed, time to first token.

Per operator of the ledger, a roofline::

    time(op) = max(flops / (peak · eta_compute), bytes / (bandwidth · eta_mem · eta_format))

summed over the pass, plus ``kernels · launch_s + fixed_s`` per step (``tokspeed.engines``). The
``ideal`` engine (eta = 1, no overhead) gives the bound — for decode the seeds' formula
``bandwidth / (weight bytes + KV bytes)``. Decode tok/s is the average over the generated tokens as the
KV cache grows; prefill runs in micro-batches of ``memory.UBATCH`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .engines.profile import IDEAL, EngineProfile, attention_spec, get_engine
from .errors import UserError
from .ledger import Op, forward_ops, resident_weight_bytes
from .memory import UBATCH, Memory, memory_fit
from .quant.kv import kv_bytes as kv_dtype_bytes
from .timing import PassTime, RooflineTimer, op_time, pass_time  # noqa: F401  (re-exported)

MAX_SAMPLES = 33   # decode steps evaluated exactly; longer runs are integrated over evenly spaced steps


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
    spec: object = field(default=None, repr=False)
    hw: object = field(default=None, repr=False)
    storage: object = field(default=None, repr=False)
    engine_profile: object = field(default=None, repr=False)
    extra: dict = field(default_factory=dict)     # devices, parallel, offload, serving, cost (tokspeed.scale)
    layout: object = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {
            "model": self.model, "hardware": self.hardware, "quant": self.quant, "kv_dtype": self.kv_dtype,
            "engine": self.engine, "batch": self.batch, "prompt": self.prompt, "gen": self.gen,
            "context": self.context, "memory": self.memory.to_dict(), "decode": self.decode.to_dict(),
            "prefill": self.prefill.to_dict(), "ttft_s": self.ttft_s, "engine_source": self.engine_source,
            **self.extra,
        }

    def decode_ops(self, depth: int | None = None) -> list[Op]:
        """The ledger of one decode step at a KV depth (default: the first generated token's)."""
        d = self.context + self.prompt if depth is None else depth
        return forward_ops(self.spec, self.storage, kv_dtype_bytes(self.kv_dtype), self.batch, 1, d)


def _check_int(name, v, lo):
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise UserError(f"--{name} must be an integer >= {lo}, got {v!r}")
    if v > 1 << 31:
        raise UserError(f"--{name} {v} is beyond any model's reach")


def decode_steps(context: int, prompt: int, gen: int) -> list[tuple[int, float]]:
    """(depth, weight) pairs whose weighted sum of step times is the total time of ``gen`` steps.
    Step i (0-based) attends ``context + prompt + i`` cached tokens."""
    start = context + prompt
    if gen <= MAX_SAMPLES:
        return [(start + i, 1.0) for i in range(gen)]
    # trapezoid over evenly spaced steps (step time is affine in depth for memory-bound passes)
    n = MAX_SAMPLES
    pts = [round(i * (gen - 1) / (n - 1)) for i in range(n)]
    out = []
    for j, p in enumerate(pts):
        left = (p - pts[j - 1]) / 2 if j else 0.5
        right = (pts[j + 1] - p) / 2 if j < n - 1 else 0.5
        out.append((start + p, left + right))
    return out


def predict(model, hardware, quant: str | None = None, kv_dtype: str = "f16", engine: str = "llama.cpp",
            prompt: int = 512, gen: int = 128, context: int = 0, batch: int = 1, *, gpus: int = 1,
            parallel: str | None = None, gpu_layers: int | None = None, offload: str = "none",
            users: int | None = None, rate: float | None = None, price_per_hour: float | None = None,
            cpu=None) -> Prediction:
    """Predict for ``model`` (catalog id, ModelSpec, config/GGUF path) on ``hardware`` (id, Hardware, TOML).

    Scale options (``tokspeed.scale``): ``gpus``/``parallel`` (tp, pp, split, tp=4,pp=2), ``gpu_layers`` /
    ``offload`` (none, auto, layers, stream) with ``cpu`` the host memory system, ``users`` / ``rate``
    (requests/s) for serving, ``price_per_hour`` (USD for the whole setup) for cost per token."""
    from .hardware.spec import Hardware
    from .resolve import resolve_model
    from .quant.schemes import canonical, scheme_for

    for name, v, lo in (("prompt", prompt, 0), ("gen", gen, 0), ("context", context, 0), ("batch", batch, 1)):
        _check_int(name, v, lo)
    spec, storage = resolve_model(model)
    if isinstance(hardware, Hardware):
        hw = hardware
    else:
        from .hardware.catalog import get_hardware

        hw = get_hardware(hardware)
    if storage is None:
        quant = canonical(quant or "F16")
        storage = scheme_for(quant, spec)
    else:
        quant = getattr(storage, "name", "file")
    kvb = kv_dtype_bytes(kv_dtype)
    prof = get_engine(engine, hw)
    spec = attention_spec(prof, spec)            # e.g. llama.cpp runs Mistral v0.1 with full attention

    # a real file may hold tensors no decoder role reads (a vision tower, rope tables): resident all the same
    weights = resident_weight_bytes(spec, storage) + getattr(storage, "unmodelled_bytes", 0)
    tokens_total = context + prompt + gen
    mem = memory_fit(spec, weights, kvb, batch, tokens_total, prompt,
                     prof.runtime_overhead_gib * 2**30, hw.usable_bytes)
    setup = None
    from .scale.configure import wants_scale

    if wants_scale(gpus, parallel, gpu_layers, offload):
        from .scale.configure import configure
        from .scale.timing import LayoutTimer

        setup = configure(spec, storage, hw, prof, kvb, batch, tokens_total, prompt, prof.runtime_overhead_gib * 2**30,
                          gpus=gpus, parallel=parallel, gpu_layers=gpu_layers, offload=offload, cpu=cpu)
        mem = setup.memory

        timer = LayoutTimer(setup.layout, spec, quant)
    else:
        timer = RooflineTimer(hw, quant)

    # decode: average over the generated tokens
    gen_eff = max(gen, 1)
    steps = decode_steps(context, prompt, gen_eff)
    total_t = total_ideal = 0.0
    first = None
    for depth, w in steps:
        ops = forward_ops(spec, storage, kvb, batch, 1, depth)
        pt = timer(ops, prof, batch, 1)
        pi = timer(ops, IDEAL, batch, 1)
        total_t += w * pt.seconds
        total_ideal += w * pi.seconds
        if first is None:
            first = pt
    wsum = sum(w for _, w in steps)
    step_s = total_t / wsum
    ideal_s = total_ideal / wsum
    # bytes the device reads from its memory (the logits' trip to the CPU is not one of them)
    first_ops = [o for o in forward_ops(spec, storage, kvb, batch, 1, context + prompt) if o.unit != "cpu"]
    bytes_tok = sum(o.bytes for o in first_ops) / batch
    w_tok = sum(o.weight_bytes for o in first_ops) / batch
    kv_tok = sum(o.kv_read_bytes + o.kv_write_bytes for o in first_ops) / batch
    band = prof.decode_error_pct / 100
    tok_s = batch / step_s / batch  # per sequence
    decode = Decode(bytes_per_token=bytes_tok, weight_bytes_per_token=w_tok, kv_bytes_per_token=kv_tok,
                    bound_tok_s=1 / ideal_s, tok_s=tok_s, ms_per_token=step_s * 1e3, bound=first.bound,
                    tok_s_low=tok_s * (1 - band), tok_s_high=tok_s * (1 + band), aggregate_tok_s=batch * tok_s)

    # prefill in micro-batches
    pf_s = pf_ideal = 0.0
    bounds = {"compute": 0.0, "memory": 0.0, "overhead": 0.0}
    done = 0
    while done < prompt:
        chunk = min(UBATCH, prompt - done)
        ops = forward_ops(spec, storage, kvb, batch, chunk, context + done)
        pt = timer(ops, prof, batch, chunk)
        pf_s += pt.seconds
        pf_ideal += timer(ops, IDEAL, batch, chunk).seconds
        bounds[pt.bound] = bounds.get(pt.bound, 0.0) + pt.seconds
        done += chunk
    pband = prof.prefill_error_pct / 100
    if prompt and not hw.matmul_flops:
        # no FLOP/s figure for this device (e.g. Apple M3/M4: Apple publishes none): prefill is
        # compute bound, so any number would be invented. Say so instead.
        prefill = Prefill(tok_s=None, seconds=None, bound="unknown (no FLOP/s figure for this device)")
    elif prompt:
        pf_tok_s = batch * prompt / pf_s
        prefill = Prefill(tok_s=pf_tok_s, seconds=pf_s, bound=max(bounds, key=bounds.get),
                          bound_tok_s=batch * prompt / pf_ideal, tok_s_low=pf_tok_s * (1 - pband),
                          tok_s_high=pf_tok_s * (1 + pband))
    else:
        prefill = Prefill(tok_s=0.0, seconds=0.0, bound="none")
    ttft = None if prefill.seconds is None else prefill.seconds + prof.fixed_s
    from .scale.sections import scale_sections

    extra = scale_sections(setup, spec, storage, kvb, hw, prof, quant, mem, decode, prefill, first, timer,
                           batch=batch, prompt=prompt, gen=gen, context=context, users=users, rate=rate,
                           price_per_hour=price_per_hour)
    return Prediction(model=spec.id, hardware=hw.id, quant=quant, kv_dtype=kv_dtype.lower(), engine=prof.name,
                      batch=batch, prompt=prompt, gen=gen, context=context, memory=mem, decode=decode,
                      prefill=prefill, ttft_s=ttft, engine_source=prof.source, spec=spec, hw=hw,
                      storage=storage, engine_profile=prof, extra=extra,
                      layout=setup.layout if setup else None)
