"""Ways to run a setup that does not fit memory, each with its own predicted figures.

``ways_to_run(model, hardware, **predict_options)`` returns, for a setup whose memory does not fit,
a list of the changes that make it fit, every one computed with ``tokspeed.predict`` (nothing here is
a separate formula):

- ``offload``: weights in system RAM (``offload="auto"``: the largest number of layers llama.cpp can keep
  in VRAM; ``"experts"`` for MoE models: only the routed experts of some layers on the CPU; other engines
  ``"stream"`` the layers over the host link), with how many layers (or layers' experts) are on the CPU;
- ``gpus``: the fewest devices of the same kind that hold it, with the engine's default parallelism
  (``tokspeed.advise.plan.parallel_for``: layer split for llama.cpp, tensor parallel otherwise);
- ``format``: the highest-precision smaller weight format that fits (catalog models only: a file's
  format is the file's);
- ``context``: the longest ``--context`` that fits when the weights fit but the KV cache does not;
- ``batch``: the largest batch that fits, when more than one sequence was asked for.

Each entry: ``kind``, ``description`` (one line), ``options`` (the ``predict`` keywords that give it),
``fits`` (always True), its figures (``decode_tok_s`` with ``decode_tok_s_low``/``_high``, ``ttft_s``, ``total_bytes``,
``capacity_bytes``) and the kind's own (``cpu_layers``, ``gpus``, ``quant``, ``context``, ``batch``).
An empty list means the setup fits (or nothing tried fits).
"""

from __future__ import annotations

from ..engines.compat import runtime_of
from ..errors import UserError
from ..predict import predict
from ..quant.format_table import alternative_formats
from ..quant.schemes import canonical
from .plan import offload_modes, parallel_for

KINDS = ("offload", "gpus", "format", "context", "batch")
MAX_GPUS = 64

def formats_for(engine: str) -> tuple[str, ...]:
    """The weight formats tried for ``format`` (``formats.toml``'s ``alternatives`` column), by the files the
    engine's runtime loads: GGUF for llama.cpp and the apps built on it, EXL2 for ExLlamaV2, safetensors formats
    for the rest. Any order: each is priced by predict and the largest that fits wins."""
    return alternative_formats(runtime_of(engine))


def is_hypothetical(pred) -> bool:
    """True when the prediction is for a setup that cannot run (its memory does not fit)."""
    d = pred.to_dict() if hasattr(pred, "to_dict") else pred
    if "hypothetical" in d:
        return bool(d["hypothetical"])
    return not d["memory"]["fits"]


def _fit_options(opts: dict) -> dict:
    """The same memory footprint with one decode step: ``gen`` tokens moved into ``context`` (total tokens
    and prompt, hence KV and activations, unchanged), so a fit check costs two passes, not ``gen``."""
    o = dict(opts)
    gen = o.get("gen", 128)
    if gen > 1:
        o["context"] = o.get("context", 0) + gen - 1
        o["gen"] = 1
    return o


def _fits(model, hardware, opts: dict):
    try:
        p = predict(model, hardware, **_fit_options(opts))
    except UserError:
        return None
    return p if p.memory.fits else None


def _fits_or_any(model, hardware, opts: dict):
    """The prediction for ``opts`` (one decode step), fitting or not; None if predict refuses it."""
    try:
        return predict(model, hardware, **_fit_options(opts))
    except UserError:
        return None


def _figures(model, hardware, opts: dict) -> tuple[dict, object] | None:
    try:
        p = predict(model, hardware, **opts)
    except UserError:
        return None
    if not p.memory.fits:
        return None
    d, m = p.decode, p.memory
    return {"decode_tok_s": d.tok_s, "decode_tok_s_low": d.tok_s_low, "decode_tok_s_high": d.tok_s_high,
            "ttft_s": p.ttft_s, "total_bytes": m.total_bytes, "capacity_bytes": m.capacity_bytes}, p


def _entry(kind, description, changed: dict, figures: dict, **extra) -> dict:
    return {"kind": kind, "description": description, "options": changed, "fits": True, **extra, **figures}


def _offload(model, hardware, base, opts) -> list[dict]:
    hw = base.hw
    if hw.kind != "gpu" or not hw.host_link_gbps or (opts.get("offload") or "none") != "none" \
            or opts.get("gpu_layers") is not None or opts.get("gpus", 1) != 1 or opts.get("parallel"):
        return []
    out = []
    for mode in offload_modes(base.spec, base.engine):
        got = _figures(model, hardware, {**opts, "offload": mode})
        if got is None:
            continue
        fig, p = got
        off = p.extra.get("offload", {})
        n_all = off.get("n_layers_with_output", base.spec.n_layers + 1) - (1 if mode == "experts" else 0)
        on_gpu = off.get("gpu_layers", 0)
        what = "layers' experts" if mode == "experts" else "layers"
        cpu = off.get("cpu", "system RAM")
        desc = (f"{n_all - on_gpu} of {n_all} {what} on the CPU ({cpu}), {on_gpu} on the GPU: "
                f"~{fig['decode_tok_s']:.3g} tok/s decode" if mode != "stream" else
                f"stream {n_all - on_gpu} of {n_all} layers from RAM over {off.get('host_link', {}).get('name', 'the host link')}"
                f" every token: ~{fig['decode_tok_s']:.3g} tok/s decode")
        out.append(_entry("offload", desc, {"offload": mode}, fig, mode=mode, cpu_layers=n_all - on_gpu,
                          gpu_layers=on_gpu, n_layers=n_all, unit=what, cpu=cpu))
    return out


def _gpus(model, hardware, base, opts) -> list[dict]:
    hw = base.hw
    if hw.kind not in ("gpu", "accelerator") or (opts.get("offload") or "none") != "none" \
            or opts.get("gpu_layers") is not None:
        return []
    start = max(opts.get("gpus", 1), 1) + 1

    def try_n(n):
        par = parallel_for(base.spec, base.engine, n, hw)
        return par if _fits(model, hardware, {**opts, "gpus": n, "parallel": par}) else None

    # doubling to a fitting count, then the fewest below it (memory per device falls as devices are added)
    lo, n = start - 1, start
    while n <= MAX_GPUS and try_n(n) is None:
        lo, n = n, n * 2
    if n > MAX_GPUS:
        n = MAX_GPUS
        if try_n(n) is None:
            return []
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if try_n(mid) is not None:
            hi = mid
        else:
            lo = mid
    par = parallel_for(base.spec, base.engine, hi, hw)
    got = _figures(model, hardware, {**opts, "gpus": hi, "parallel": par})
    if got is None:
        return []
    fig, _ = got
    return [_entry("gpus", f"{hi} x {hw.name} ({par}): ~{fig['decode_tok_s']:.3g} tok/s decode",
                   {"gpus": hi, "parallel": par}, fig, gpus=hi, parallel=par)]


def _format(model, hardware, base, opts) -> list[dict]:
    now = base.memory.weights_bytes
    probe = "Q8_0" if canonical(base.quant) != "Q8_0" else "F16"
    p = _fits_or_any(model, hardware, {**opts, "quant": probe})
    if p is not None and p.quant != probe:      # a weights file keeps its own format whatever --quant says
        return []
    best = None
    for q in formats_for(base.engine):
        p = _fits(model, hardware, {**opts, "quant": q})
        if p is None or p.memory.weights_bytes >= now:
            continue
        if best is None or p.memory.weights_bytes > best[1]:
            best = (q, p.memory.weights_bytes)
    if best is None:
        return []
    got = _figures(model, hardware, {**opts, "quant": best[0]})
    if got is None:
        return []
    fig, p = got
    return [_entry("format", f"{p.quant} weights ({fig['total_bytes'] / 1e9:.1f} GB in all): "
                             f"~{fig['decode_tok_s']:.3g} tok/s decode",
                   {"quant": p.quant}, fig, quant=p.quant, weights_bytes=p.memory.weights_bytes)]


def _context(model, hardware, base, opts) -> list[dict]:
    m = base.memory
    prompt, gen, ctx = opts.get("prompt", 512), opts.get("gen", 128), opts.get("context", 0)
    longest = m.max_context - prompt - gen      # max_context counts every token in the cache
    if m.max_context <= 0 or longest < 0 or longest >= ctx:
        return []
    got = _figures(model, hardware, {**opts, "context": longest})
    if got is None:
        return []
    fig, _ = got
    return [_entry("context", f"context up to {longest:,} tokens (asked {ctx:,}; {m.max_context:,} in the cache "
                              f"with prompt and output): ~{fig['decode_tok_s']:.3g} tok/s decode",
                   {"context": longest}, fig, context=longest, max_total_tokens=m.max_context)]


def _batch(model, hardware, base, opts) -> list[dict]:
    m, b = base.memory, opts.get("batch", 1)
    if b <= 1 or not 1 <= m.max_batch < b:
        return []
    got = _figures(model, hardware, {**opts, "batch": m.max_batch})
    if got is None:
        return []
    fig, _ = got
    return [_entry("batch", f"batch {m.max_batch} (asked {b}): ~{fig['decode_tok_s']:.3g} tok/s per sequence",
                   {"batch": m.max_batch}, fig, batch=m.max_batch)]


def ways_to_run(model, hardware, **predict_options) -> list[dict]:
    """Ways to make a non-fitting setup fit (see the module docstring); [] when it already fits."""
    base = predict(model, hardware, **predict_options)
    if base.memory.fits:
        return []
    opts = dict(predict_options)
    for k, v in (("prompt", 512), ("gen", 128), ("context", 0), ("batch", 1)):
        opts.setdefault(k, v)
    out = []
    for way in (_offload, _gpus, _format, _context, _batch):
        out += way(model, hardware, base, opts)
    return out

