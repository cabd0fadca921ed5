"""What runs on this machine? Every catalog model, in the best weight format that fits, ranked.

For each catalog model (after the filters) ``rank_models`` looks for the highest-precision weight format
its engine runs that fits the device's memory at ``context`` (and, with ``min_tok_s``, decodes at least
that fast). Each candidate is one ``tokspeed.predict(model, hw, quant=FORMAT, context=context,
prompt=prompt, gen=1, engine=engine, gpus=gpus, offload=offload)``: memory holds context + prompt + 1
tokens, decode is the step after the prompt, TTFT prefills the prompt on top of the context. Formats are
ordered by precision (bytes per weight), so the best one is found by bisection (about log2 of the number
of formats predictions per model).

Ranking: models that fit at ``context`` and meet ``min_tok_s`` first, then those that fit but are slower,
then those that do not fit (``fits: false``, shown in their smallest format); within each group by
parameter count (largest first), then by expected decode tok/s. Without ``offload`` nothing is offloaded;
with it, only a model that fits the device in no format is offloaded (and its row says so).

What people want, not merely the largest file that loads:
- a quality floor: no format below the Q4 class (fewer than ``QUALITY_FLOOR_BITS`` bits per weight over the
  whole model: Q3_K_M, Q2_K, EXL2-3.0) unless ``min_quality`` names a lower format or ``allow_low_bits``;
- the released format preferred: a model released below 16 bits (gpt-oss in MXFP4, DeepSeek-V3 in FP8) gains
  nothing from a wider file, so formats wider than its release are not tried and the release itself is, where
  the engine runs it;
- the trained window respected (``tokspeed.models.window``: context + prompt + gen <= window, gen = 1 here):
  tokens beyond ``spec.max_context`` make the row ``fits: false`` with that ``reason``, unless
  ``rope_scaling`` (the engine extends the window); with ``context_to_window`` (fit's default context) each
  model's context is first clamped to what its window holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..engines.compat import check, runtime_of, supported_formats as runs_on_device, supported_formats as table
from ..engines.default_format import released_format
from ..engines.profile import attention_spec, get_engine
from ..errors import UserError
from ..hardware.catalog import get_hardware
from ..hardware.spec import Hardware
from ..ledger import resident_weight_bytes
from ..memory import memory_budget
from ..models import window
from ..models.catalog import get_model, model_ids
from ..models.spec import USES
from ..predict import predict
from ..quant.format_table import fit_formats, fit_runtimes, quality_for, row
from ..quant.kv import kv_bytes
from ..quant.schemes import canonical, scheme_for
from ..scale.offload import first_true
from ..workload import engine_build

# fit's context when none is asked: 8K, the window of the Llama 3 generation and a common chat length; each
# model is then tried at the smaller of this and what its own window holds (``context_to_window``)
DEFAULT_FIT_CONTEXT = 8192

QUALITY_FLOOR_BITS = 4.0    # the Q4 class: Q4_K 4.5, IQ4_XS 4.25, MXFP4 4.25, AWQ/GPTQ/INT4 4 + scales bits/weight


@lru_cache(maxsize=None)
def nominal_bits(fmt: str) -> float:
    """Bits per weight of a format's bulk tensors (its main type): the expert FFN of a 4096-wide MoE
    (Mixtral 8x7B, whose rows every block size divides), so a mix's small-model fallbacks do not blur it:
    Q4_K_M 4.5, IQ4_XS 4.25, Q3_K_M 3.44, Q2_K 2.625, MXFP4 4.25, AWQ-4B 4.16, EXL2-3.0 3.0."""
    ref = get_model("mixtral-8x7b")
    return scheme_for(fmt, ref).element_bytes("ffn_up_exps", 1, ref.d_model) * 8


def bits_per_weight(spec, storage) -> float:
    """Resident weight bits per parameter of ``spec`` stored as ``storage`` (the whole model, every tensor)."""
    return resident_weight_bytes(spec, storage) * 8 / spec.n_params


def supported_formats(engine: str, hw=None) -> tuple[str, ...]:
    """Weight formats ``engine`` runs on ``hw`` that people download for it, highest precision first: the
    formats ``formats.toml`` has fit try for its runtime (ordered by bits per weight, which the bisection needs), kept where the capability table
    (``tokspeed.engines.compat``) says the engine runs the format on this device."""
    tried = fit_formats(runtime_of(engine))
    if tried is None:
        raise UserError(f"unknown engine {engine!r} for fit", f"one of {', '.join(fit_runtimes())}")
    runs = set(table(engine, hw)) if hw is not None else None
    return tuple(f for f in tried if runs is None or f in runs)


@dataclass
class FitRow:
    """One model's best setup on the device (``to_dict`` is one object of ``tokspeed fit --json``)."""

    model: str
    quant: str
    fits: bool
    context: int                    # tokens of context the row is for (fit's default: clamped to the window)
    offload: str                    # "none", or e.g. "layers: 40/81 on the GPU" (llama.cpp -ngl)
    memory: dict
    decode: dict
    prefill: dict
    ttft_s: float | None
    params_b: float
    active_params_b: float
    family: str
    use: tuple = ()
    meets_min_tok_s: bool = True
    quality: dict | None = None     # llama.cpp's published perplexity increase for the type, where sourced
    hypothetical: bool = False
    reason: str = ""                # why it does not fit when memory is not the reason (the trained window)
    prediction: object = field(default=None, repr=False)

    def to_dict(self) -> dict:
        d = {"model": self.model, "quant": self.quant, "fits": self.fits, "context": self.context,
             "offload": self.offload,
             "memory": self.memory, "decode": self.decode, "prefill": self.prefill, "ttft_s": self.ttft_s,
             "params_b": round(self.params_b, 3), "active_params_b": round(self.active_params_b, 3),
             "family": self.family, "use": list(self.use), "meets_min_tok_s": self.meets_min_tok_s,
             "hypothetical": self.hypothetical}
        if self.reason:
            d["reason"] = self.reason
        if self.quality:
            d["quality"] = self.quality
        return d


@dataclass(frozen=True)
class _Prepared:
    """A catalog spec with its weight storage, in the shape ``resolve_model`` accepts (like a file)."""

    spec: object
    storage: object


class _MemoStorage:
    """A WeightStorage that remembers each tensor's bytes: one prediction reads every tensor several
    times (residency, decode, prefill), and the rules behind a GGUF mix are the slow part."""

    def __init__(self, inner):
        self._inner = inner
        self.name = inner.name
        self.tensor_bytes = lru_cache(maxsize=None)(inner.tensor_bytes)

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


@lru_cache(maxsize=1024)
def _candidates(spec, formats: tuple, floor_bits: float = 0.0, released: str = "") -> tuple:
    """The model in each format, with memoised tensor sizes (kept for the next device, e.g. the web page),
    widest first: none below ``floor_bits`` bits per weight, none wider than the ``released`` format (which is
    tried itself) when that is given."""
    out = []
    for f in dict.fromkeys((*formats, released) if released else formats):
        if nominal_bits(f) < floor_bits:
            continue            # below the quality floor
        try:
            c = _Prepared(spec, _MemoStorage(scheme_for(f, spec)))
        except UserError:
            continue            # a format this model cannot take (e.g. a block size that does not divide a row)
        out.append((bits_per_weight(spec, c.storage), c))
    top = next((b for b, c in out if c.storage.name == released), None)
    out = [(b, c) for b, c in out if top is None or b <= top + 1e-9]
    return tuple(c for b, c in sorted(out, key=lambda bc: -bc[0]))


def _offload_label(pred) -> str:
    off = pred.extra.get("offload")
    if not off:
        return "none"
    gl, total = off.get("gpu_layers"), off.get("n_layers_with_output")
    if gl is not None and total is not None and gl >= total:
        return "none"
    return f"{off.get('mode')}: {gl}/{total} layers on the GPU" if gl is not None else str(off.get("mode"))


def _row(spec, pred, min_tok_s, gguf: bool, context: int, reason: str = "") -> FitRow:
    mem, dec, pf = pred.memory, pred.decode, pred.prefill
    fits = bool(mem.fits) and not reason
    return FitRow(
        model=spec.id, quant=pred.quant, fits=fits, offload=_offload_label(pred), context=context,
        memory={"weights_bytes": mem.weights_bytes, "kv_bytes": mem.kv_bytes, "total_bytes": mem.total_bytes,
                "capacity_bytes": mem.capacity_bytes, "fits": fits},
        decode={"tok_s": dec.tok_s, "bound_tok_s": dec.bound_tok_s, "ms_per_token": dec.ms_per_token, "bound": dec.bound},
        prefill={"tok_s": pf.tok_s, "seconds": pf.seconds}, ttft_s=pred.ttft_s,
        params_b=spec.n_params / 1e9, active_params_b=spec.n_active_params / 1e9, family=spec.family,
        use=tuple(spec.use), meets_min_tok_s=min_tok_s is None or dec.tok_s >= min_tok_s,
        quality=quality_for(pred.quant) if gguf else None, hypothetical=not fits, reason=reason, prediction=pred)


def _bisect(n: int, ok) -> int:
    """The first index in 0..n-1 where the monotone predicate ``ok`` holds (n if none): the offload
    model's bisection (``tokspeed.scale.offload.first_true``) over the format list."""
    return first_true(ok, 0, n - 1) if n else 0


def _walk(n: int, ok, start: int) -> int:
    """Like ``_bisect`` but starting from a guess and walking: one or two checks when the guess is right."""
    if n == 0:
        return 0
    i = max(0, min(start, n - 1))
    if ok(i):
        while i > 0 and ok(i - 1):
            i -= 1
        return i
    for j in range(i + 1, n):
        if ok(j):
            return j
    return n


def _best(cands, run, min_tok_s, fits_memory=None, guess=None):
    """The first candidate (highest precision first) that fits and is fast enough, else the last one.

    ``fits_memory(candidate)``, where given, is predict's memory check alone (cheap): it narrows the
    search before any full prediction, starting from ``guess(cands)`` (an index); the prediction's own
    ``memory.fits`` stays authoritative."""
    cache = {}

    def pred(i):
        if i not in cache:
            cache[i] = run(cands[i])
        return cache[i]

    n = len(cands)
    start = 0
    if fits_memory is not None:
        start = min(_walk(n, lambda i: fits_memory(cands[i]), guess(cands) if guess else n // 2), n - 1)
        while start < n - 1 and not pred(start).memory.fits:
            start += 1          # the cheap check was optimistic (never expected): step down
    fits = _bisect(n - start, lambda j: pred(start + j).memory.fits) + start if fits_memory is None else start
    if fits >= n or not pred(fits).memory.fits:
        return pred(n - 1)      # nothing fits: the smallest format comes closest
    if min_tok_s is None or pred(fits).decode.tok_s >= min_tok_s:
        return pred(fits)
    fast = _bisect(n - fits, lambda j: pred(fits + j).memory.fits and pred(fits + j).decode.tok_s >= min_tok_s)
    return pred(min(fits + fast, n - 1))


def _memory_check(hw, engine, ctx_of, prompt):
    """predict's memory arithmetic for one device without offload, without timing anything:
    ``tokspeed.memory.memory_budget`` fits when weights + (KV cache + activations + runtime) <= capacity, and
    the bracket does not depend on the weights, so it is computed once per model (at ``ctx_of(spec)`` tokens
    of context)."""
    prof = get_engine(engine, hw)
    kvb = kv_bytes("f16")
    rest_of = {}

    def rest(spec) -> float:
        if spec not in rest_of:
            rest_of[spec] = memory_budget(spec, 0.0, kvb, 1, ctx_of(spec) + prompt + 1, prompt,
                                          prof.runtime_overhead_gib * 2**30, hw.usable_bytes).total_bytes
        return rest_of[spec]

    def check(cand) -> bool:
        spec = attention_spec(prof, cand.spec)
        weights = resident_weight_bytes(spec, cand.storage) + getattr(cand.storage, "unmodelled_bytes", 0)
        return weights + rest(spec) <= hw.usable_bytes

    def guess(cands) -> int:
        """First candidate whose weights at the nominal bytes per weight of its main type leave room
        for the rest: where the exact check starts."""
        spec = attention_spec(prof, cands[0].spec)
        for i, c in enumerate(cands):
            if spec.n_params * c.storage.element_bytes("ffn_up", 0, spec.d_model) + rest(spec) <= hw.usable_bytes:
                return i
        return len(cands)

    return check, guess


def _id_starts_with(mid: str, family: str) -> bool:
    """Whether an id begins with a family name, dashes aside, and no letter runs on after it: "gemma3" is
    gemma-3-12b's family and not gemma-3n-e4b's, "qwen" qwen3-8b's."""
    want, i = family.replace("-", ""), 0
    for ch in want:
        while i < len(mid) and mid[i] == "-":
            i += 1
        if i == len(mid) or mid[i] != ch:
            return False
        i += 1
    return i == len(mid) or not mid[i].isalpha()


def _matches(spec, family, max_params, moe, use) -> bool:
    if family:
        f = family.lower()
        fam = spec.family.lower()
        if not (fam == f or fam.startswith(f + "_") or _id_starts_with(spec.id, f)):
            return False
    if max_params is not None and spec.n_params / 1e9 > max_params:
        return False
    if moe is not None and spec.is_moe != moe:
        return False
    if use and use not in spec.use:
        return False
    return True


def rank_models(hardware, *, context: int = DEFAULT_FIT_CONTEXT, prompt: int = 512, min_tok_s: float | None = None,
                engine: str = "llama.cpp", gpus: int = 1, offload: str = "none", family: str | None = None,
                max_params: float | None = None, moe: bool | None = None, use: str | None = None,
                top: int | None = None, models=None, engine_version: str | None = None,
                flash_attention: bool | None = None, min_quality: str | None = None, allow_low_bits: bool = False,
                rope_scaling: bool = False, context_to_window: bool = False) -> list[FitRow]:
    """Every catalog model (or ``models``: ids or specs) on ``hardware``, best format each, ranked
    (see the module docstring). ``hardware``: a Hardware, a catalog id/alias or a TOML path.
    ``engine_version`` / ``flash_attention``: the llama.cpp build and -fa every prediction is for.
    ``min_quality``: the lowest format allowed (a ``--quant`` name; default the Q4 class); ``allow_low_bits``:
    no floor; ``rope_scaling``: a context past a model's trained window is allowed (the engine extends it);
    ``context_to_window``: each model is tried at ``context`` or, where smaller, the longest context its
    trained window holds with this prompt and one generated token (``tokspeed.models.window``), so a default
    context never makes a model that runs at its own window read as not running (the row's ``context``)."""
    if use is not None and use not in USES:
        raise UserError(f"use must be one of {', '.join(USES)}, got {use!r}", field="use")
    for name, v in (("context", context), ("prompt", prompt)):
        if not isinstance(v, int) or v < 0:
            raise UserError(f"{name} must be a whole number >= 0, got {v!r}", field=name)
    if top is not None and top < 1:
        raise UserError(f"top must be at least 1, got {top}", field="top")
    if max_params is not None and max_params <= 0:
        raise UserError(f"max_params must be positive (billions), got {max_params}", field="max_params")
    if offload == "experts":         # only MoE models have expert tensors to put on the CPU: rank those
        if moe is False:
            raise UserError("offload experts moves MoE expert tensors to the CPU; it ranks only MoE models",
                            "drop the dense-only filter, or use offload auto", field="moe")
        moe = True
    if not isinstance(hardware, Hardware):
        hardware = get_hardware(hardware)
    formats = supported_formats(engine, hardware)
    if not formats:
        check(engine, hardware)      # raises the one-line reason (the engine does not run on this device)
    build = engine_build(engine_version, flash_attention)
    if build:                        # a bad build or -fa is one error, not every model skipped

        get_engine(engine, hardware, version=engine_version, flash_attention=flash_attention)
    specs = [get_model(m) if isinstance(m, str) else m for m in (models or model_ids())]
    specs = [s for s in specs if _matches(s, family, max_params, moe, use)]

    def ctx_of(spec) -> int:
        if not context_to_window:
            return context
        return min(context, max(window.longest_context(spec.max_context, prompt, 1), 0) if spec.max_context
                   else context)

    def runner(mode):
        def run(prepared):
            return predict(prepared, hardware, context=ctx_of(prepared.spec), prompt=prompt, gen=1, engine=engine,
                           gpus=gpus, offload=mode, **build)
        return run

    cheap, guess = _memory_check(hardware, engine, ctx_of, prompt) if gpus == 1 else (None, None)
    floor = _floor_bits(min_quality, allow_low_bits, formats)

    runnable = set(runs_on_device(engine, hardware))
    rows = []
    for spec in specs:
        released = released_format(spec)
        released = released if released not in ("BF16", "F16") and released in runnable else ""
        cands = _candidates(spec, tuple(formats), floor, released)
        if not cands:
            continue
        try:
            pred = _best(cands, runner("none"), min_tok_s, cheap, guess)
            if offload != "none" and not pred.memory.fits:
                # only a model that fits in no format on the device alone is offloaded
                pred = _best(cands, runner(offload), min_tok_s)
        except UserError as e:
            if "engine" in str(e).lower() or "architecture" in str(e).lower():
                continue             # a model this engine cannot run is not a candidate
            raise
        ctx = ctx_of(spec)
        rows.append(_row(spec, pred, min_tok_s, gguf=all("gguf" in row(f).engine_lists for f in formats), context=ctx,
                         reason="" if rope_scaling else window.reason(spec.id, spec.max_context, ctx, prompt, 1)))
    rows.sort(key=lambda r: (0 if r.fits and r.meets_min_tok_s else 1 if r.fits else 2, -r.params_b,
                             -(r.decode["tok_s"] or 0.0)))
    return rows[:top] if top else rows


def _floor_bits(min_quality, allow_low_bits, formats) -> float:
    """The fewest nominal bits per weight a candidate format may have: 0 with ``allow_low_bits``, those of
    the ``min_quality`` format, else ``QUALITY_FLOOR_BITS`` (the Q4 class)."""
    if allow_low_bits:
        return 0.0
    if min_quality is None:
        return QUALITY_FLOOR_BITS

    q = canonical(min_quality)
    if q not in formats:
        raise UserError(f"min_quality {min_quality!r} is not a format this engine is ranked in",
                        "one of " + ", ".join(formats))
    return nominal_bits(q) - 1e-9
