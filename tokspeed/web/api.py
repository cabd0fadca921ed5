"""The JSON API behind `tokspeed web`, as plain functions of typed queries (``schemas.py``; no HTTP in here).

Every refusal raises ``ApiError`` (or ``UserError``, which the app turns into a 400): a value over the API's
limits is 400, a malformed one 422 (FastAPI's own validation), a missing upload 404. The server never reads
a path a client names: models are catalog ids or ``upload:<id>``, hardware is a catalog id or ``custom``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import tomllib
from pathlib import Path

from ..advise.runs_here import DEFAULT_FIT_CONTEXT, rank_models
from ..engines.profile import ENGINES
from ..errors import UserError, did_you_mean
from ..explain import explain
from ..explain.journey import build_journey
from ..guard.names import catalog_ref
from ..hardware.catalog import get_hardware
from ..hardware.devices import all_hardware
from ..hardware.spec import Hardware
from .. import resolve
from ..models.catalog import all_models, get_model, model_ids, resolve_id
from ..predict import predict
from ..quant.kv import KV_BYTES
from ..quant.schemes import NAMES
from ..report.html import render_report
from ..serving.metrics import SLO
from ..serving_api import ServeQuery, serve
from ..userfile import parse_json
from .errors import ApiError
from .uploads import MAX_GGUF_SIZE, Uploads
from .ways import engine_options, predict_options, ways_to_run

# What one request may cost. The prefill ledger is summed per 512-token micro-batch, so its CPU time grows
# with the prompt: DeepSeek-V3 on an H100 takes 1.3 s (predict) to 2.3 s (explain) at 131,072 tokens and
# 8-15 s at 1,048,576 on the 2-core build machine (`python benchmarks/bench_web.py`, RESULTS_web.md).
MAX_PREFILL = 131072
MAX_BATCH = 4096
# The ways to run a misfit are a search of tens of predictions (GPU counts, every smaller format, offload):
# 3.8 s for Llama 3.1 405B on an RTX 4090 with a 4,096-token prompt, 6.8 s at 16,384, 38 s for DeepSeek-V3
# at 131,072 (measured on the loaded 2-core build machine): searched for prompts up to this many tokens.
MAX_WAYS_PROMPT = 32768
# The ranking prices every catalog model (2.2 s for 87 models on an RTX 4090 with a 512-token prompt, measured
# with catalog's tokspeed.advise.runs_here): its prompt is bounded tighter, its context by the largest window in use (10M).
MAX_FIT_PROMPT = 8192
MAX_FIT_CONTEXT = 1 << 24
# Contexts up to the model's window, and never less than the seeds' 128K (they take Llama 3 8B, an 8K-window
# model, to 128K to show the KV cache overtaking the weights).
MIN_TOKEN_LIMIT = 131072
# The context sweep of the calculator's chart: the seeds' 1K..128K (report.html's SWEEP_CONTEXTS).
CURVE_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
PRESETS = tomllib.loads((Path(__file__).with_name("presets.toml")).read_text())["preset"]


def hf_id(source: str) -> str | None:
    """The Hugging Face repo id in a catalog entry's source URL, if it is one."""
    prefix = "https://huggingface.co/"
    if not source.startswith(prefix):
        return None
    parts = source[len(prefix):].split("/")
    return "/".join(parts[:2]) if len(parts) >= 2 else None


# ---- catalogs -------------------------------------------------------------------------------------
def api_models() -> dict:
    out = []
    for m in all_models():
        active = getattr(m, "n_active_params", m.n_params)
        out.append({"id": m.id, "name": m.name or m.id, "params_b": round(m.n_params / 1e9, 3),
                    "n_layers": m.n_layers, "n_kv_heads": m.n_kv_heads, "n_heads": m.n_heads, "moe": m.is_moe,
                    "active_params_b": round(active / 1e9, 3) if m.is_moe else None, "family": m.family,
                    "hf_id": hf_id(m.source), "max_context": m.max_context, "source": m.source})
    return {"models": out}


def api_hardware() -> dict:
    return {"hardware": [{"id": h.id, "name": h.name, "kind": h.kind, "vendor": h.vendor, "memory_gb": h.memory_gb,
                          "bandwidth_gbps": h.bandwidth_gbps, "fp16_tflops": h.fp16_tflops or None,
                          "power_w": h.tdp_w or None} for h in all_hardware()]}


def api_options() -> dict:
    """Choices for the form: quants, KV dtypes, engines, presets."""
    return {"quant": [n for n in NAMES if "<" not in n], "kv_dtype": list(KV_BYTES), "engine": ENGINES,
            "presets": PRESETS}


# ---- resolving a query ------------------------------------------------------------------------------
def resolve_model(ref: str, uploads: Uploads):
    """(what predict() takes, its ModelSpec) for a catalog id or an upload reference."""
    ref = ref.strip()
    if ref.startswith("upload:"):
        path = str(uploads.path(ref))
        return path, read_model(path)

    mid = resolve_id(ref)
    if mid is None:
        hint = did_you_mean(ref, model_ids())
        raise ApiError(400, f"unknown model {ref!r}" + (f" ({hint})" if hint else "; see /api/models"), "model")
    return mid, get_model(mid)


def read_model(path: str):
    """The ModelSpec of a file the server stored."""
    return resolve.resolve_model(path)[0]


CUSTOM_FIELDS = ("bandwidth_gbps", "memory_gb", "fp16_tflops", "host_link_gbps")


def resolve_hardware(q):
    ref = q.hardware.strip()
    if ref.lower() == "custom":
        for name in ("bandwidth_gbps", "memory_gb"):
            if getattr(q, name) is None:
                raise ApiError(422, f"custom hardware needs {name}", name)
        vals = {k: getattr(q, k) or 0.0 for k in CUSTOM_FIELDS}
        return Hardware.from_dict({"id": "custom", "name": "custom device", "kind": "gpu", "vendor": "custom",
                                   **vals, "source": "web form"})
    return catalog_hardware(ref)


def catalog_hardware(ref: str):
    """A catalog device by id or alias: never a file (``guard.names.catalog_ref`` before any lookup)."""
    try:
        return get_hardware(catalog_ref(ref, "hardware"))
    except UserError as e:
        raise ApiError(400, e.message, "hardware", e.suggestion) from None


def check_cost(spec, *, context: int, prefill: int, gen: int, batch: int):
    """Refuse (400) what no real run could ask for, before any work: tokens beyond the model's window,
    a prefill beyond MAX_PREFILL, a batch beyond MAX_BATCH."""
    if batch > MAX_BATCH:
        raise ApiError(400, f"batch {batch:,} is above this server's limit of {MAX_BATCH:,}", "batch")
    if prefill > MAX_PREFILL:
        raise ApiError(400, f"a prefill of {prefill:,} tokens is above this server's limit of {MAX_PREFILL:,}",
                       "prompt")
    limit = token_limit(spec)
    total = context + prefill + gen
    if total > limit:
        raise ApiError(400, f"context + prompt + generated = {total:,} tokens is beyond this server's limit for "
                            f"{spec.id}: {limit:,} (its {spec.max_context:,}-token window, at least "
                            f"{MIN_TOKEN_LIMIT:,})", "context",
                       f"at most {max(limit - prefill - gen, 0):,} tokens of context with this prompt")


def token_limit(spec) -> int:
    return max(spec.max_context, MIN_TOKEN_LIMIT)


def setup_kwargs(q) -> dict:
    """``predict`` keywords of the setup: format, engine and scale (not the token counts)."""
    kw = predict_options(q)
    for k in ("prompt", "gen", "context", "batch"):
        kw.pop(k)
    return kw


def prediction_doc(pred) -> dict:
    d = pred.to_dict()
    d.setdefault("hypothetical", not pred.memory.fits)
    return d


def make_prediction(q, uploads: Uploads):
    model, spec = resolve_model(q.model, uploads)
    hw = resolve_hardware(q)
    check_cost(spec, context=q.context, prefill=q.prompt, gen=q.gen, batch=q.batch)
    pred = predict(model, hw, **setup_kwargs(q), prompt=q.prompt, gen=q.gen, context=q.context, batch=q.batch)
    return model, hw, pred


def api_predict(q, uploads: Uploads) -> dict:
    return prediction_doc(make_prediction(q, uploads)[2])


def explanation_doc(expl) -> dict:
    d = expl.to_dict()
    if not d.get("matmul_tflops"):                      # no FLOP/s figure: the ridge is unknown, not 0
        d["matmul_tflops"] = d["ridge_flops_per_byte"] = None
    d["prediction"] = prediction_doc(expl.prediction)
    return d


def api_explain(q, uploads: Uploads) -> dict:
    model, spec = resolve_model(q.model, uploads)
    hw = resolve_hardware(q)
    check_cost(spec, context=q.context, prefill=q.prefill, gen=1, batch=q.batch)
    if q.gpus > 1 or q.offload != "none" or q.parallel:
        raise ApiError(422, "the journey explains one device without offload: drop gpus/parallel/offload", "gpus")
    return explanation_doc(explain(model, hw, prefill=q.prefill, context=q.context, batch=q.batch,
                                   quant=q.quant or None, kv_dtype=q.kv_dtype, **engine_options(q)))


def context_curve(model, hw, pred, q) -> list[dict]:
    """Decode tok/s of one token at each context of the chart: 1K..128K, and the model's window if larger.
    It does not depend on the context, prompt or output length asked for, so it is kept for the next edit."""
    key = (str(model), q.hardware, *(getattr(q, f) for f in CUSTOM_FIELDS), q.quant, q.kv_dtype, q.engine,
           q.engine_version, q.flash_attn, q.batch, q.gpus, q.parallel, q.offload)
    with _CURVES_LOCK:
        if key in _CURVES:
            return _CURVES[key]

    quant = None if pred.quant == "file" else pred.quant
    out = []
    limit = token_limit(pred.spec)
    for c in [c for c in CURVE_CONTEXTS if c < limit] + [limit]:
        p = predict(model, hw, quant=quant, kv_dtype=q.kv_dtype, **engine_options(q), prompt=0, gen=1, context=c,
                    batch=q.batch, **{k: v for k, v in setup_kwargs(q).items() if k in ("gpus", "parallel", "offload")})
        out.append({"context": c, "tok_s": p.decode.tok_s, "bound_tok_s": p.decode.bound_tok_s,
                    "fits": p.memory.fits})
    with _CURVES_LOCK:
        _CURVES[key] = out
        while len(_CURVES) > 256:
            _CURVES.pop(next(iter(_CURVES)))
    return out


_CURVES: dict = {}
_CURVES_LOCK = threading.Lock()


def api_calculator(q, uploads: Uploads) -> dict:
    """What the page shows for one setting: the prediction, the journey (of the first generated token or the
    prefill; on one device: with gpus/offload the journey is the single-device one, said so by the page),
    the decode-vs-context curve."""
    model, hw, pred = make_prediction(q, uploads)
    if q.explain == "prefill" and q.prompt > 0:
        ex = dict(prefill=q.prompt, context=q.context)
    else:
        ex = dict(prefill=0, context=q.context + q.prompt)
    expl = explain(model, hw, **ex, batch=q.batch, quant=q.quant or None, kv_dtype=q.kv_dtype, **engine_options(q))
    doc = prediction_doc(pred)
    return {"prediction": doc, "explanation": explanation_doc(expl), "context_curve": context_curve(model, hw, pred, q),
            "roofline": roofline_points(model, hw, pred, q), "hypothetical": doc["hypothetical"]}


def roofline_points(model, hw, pred, q) -> dict:
    """Every GPU stage of one decode step and of the prefill at its attained FLOP/s (FLOPs ÷ its time) and
    arithmetic intensity (FLOPs ÷ bytes): the points of the roofline chart. Single device, no offload."""
    if q.gpus > 1 or q.offload != "none" or q.parallel:
        pred = predict(model, hw, quant=q.quant or None, kv_dtype=q.kv_dtype, **engine_options(q), prompt=q.prompt,
                       gen=q.gen, context=q.context, batch=q.batch)
    out = {}
    known_prefill = q.prompt > 0 and pred.prefill.tok_s is not None      # None: the device has no FLOP/s figure
    for mode in ("decode", "prefill") if known_prefill else ("decode",):
        pts = []
        for s in build_journey(pred, mode).stages:
            d = s.to_dict() if hasattr(s, "to_dict") else s.__dict__
            nbytes = d.get("bytes") or (d["weight_bytes"] + d["kv_bytes"] + d["act_bytes"])
            if d["phase"] != "cpu" and d["flops"] > 0 and nbytes > 0 and d["seconds"] > 0:
                pts.append({"label": d["label"], "intensity": d["flops"] / nbytes,
                            "flops_per_s": d["flops"] / d["seconds"], "bound": d.get("bound", "")})
        out[mode] = pts
    return out


def api_alternatives(q, uploads: Uploads) -> dict:
    if q.prompt > MAX_WAYS_PROMPT:
        raise ApiError(400, f"the ways to run are searched for prompts up to {MAX_WAYS_PROMPT:,} tokens, "
                            f"got {q.prompt:,}", "prompt")
    model, hw, pred = make_prediction(q, uploads)
    return {"prediction": prediction_doc(pred),
            "alternatives": [] if pred.memory.fits else ways_to_run(model, hw, q)}


def fit_available() -> bool:
    return importlib.util.find_spec("tokspeed.advise.runs_here") is not None


def api_fit(q) -> dict:
    if q.prompt > MAX_FIT_PROMPT:
        raise ApiError(400, f"the ranking takes prompts up to {MAX_FIT_PROMPT:,} tokens, got {q.prompt:,}", "prompt")
    if q.context is not None and q.context > MAX_FIT_CONTEXT:
        raise ApiError(400, f"context {q.context:,} is above this server's limit of {MAX_FIT_CONTEXT:,}", "context")

    hw = catalog_hardware(q.hardware)
    context = DEFAULT_FIT_CONTEXT if q.context is None else q.context     # the default is clamped to each window
    rows = rank_models(hw, context=context, context_to_window=q.context is None, prompt=q.prompt, min_tok_s=q.min_tok_s, **engine_options(q), gpus=q.gpus,
                       offload=q.offload, family=q.family, max_params=q.max_params, moe=q.moe, use=q.use,
                       top=q.top)
    return {"hardware": hw.id, "rows": [r.to_dict() for r in rows]}


def api_report(q, uploads: Uploads) -> str:
    """The `tokspeed report` page for one setting (without its matplotlib charts: the page draws its own)."""
    model, hw, _ = make_prediction(q, uploads)       # validates and bounds the request first
    return render_report(model, hw, quant=q.quant or None, kv_dtype=q.kv_dtype, **engine_options(q), prompt=q.prompt,
                         gen=q.gen, context=q.context, batch=q.batch, charts=False)


def api_serve(q) -> dict:
    """`tokspeed serve --json` (search mode) for catalog names: the layouts of ``q.gpus`` devices and the frontier."""
    try:
        ref = catalog_ref(q.model, "model")
    except UserError as e:
        raise ApiError(400, e.message, "model", e.suggestion) from None
    if ref.startswith("upload:"):
        raise ApiError(400, "the serving search takes catalog models only, not uploads", "model")
    model, spec = resolve_model(ref, None)
    hw = catalog_hardware(q.hardware)
    window = spec.max_context or token_limit(spec)       # a served request stays within the model's window
    if q.isl + q.osl > window:
        raise ApiError(400, f"ISL + OSL = {q.isl + q.osl:,} tokens is beyond {spec.id}'s {window:,}-token window", "isl",
                       f"at most {max(window - q.osl, 1):,} prompt tokens with this OSL")
    key = (model, hw.id, q.engine, q.quant or None, q.kv_dtype, q.engine_version, q.gpus, q.isl, q.osl,
           q.slo_ttft_ms, q.slo_tpot_ms)
    with _SERVED_LOCK:
        hit = _SERVED.get(key)
    if hit is not None:                    # an answer already made is given whatever runs now
        return hit
    if not _SEARCH.acquire(blocking=False):
        raise ApiError(503, "a serving search is already running; ask again when it has answered")
    try:
        doc = _serve_doc(*key)
    finally:
        _SEARCH.release()
    with _SERVED_LOCK:
        _SERVED[key] = doc
        while len(_SERVED) > SERVED_KEPT:
            _SERVED.pop(next(iter(_SERVED)))
    return doc


# One serving search at a time (each is bounded to ~1-4 s of CPU by the query's limits, but several in parallel, or
# the same query with other SLO floats that miss the cache, would hold every worker thread): the others get a 503.
# The page asks again for the same setting as its form changes elsewhere: the last SERVED_KEPT answers are kept.
_SEARCH = threading.Lock()
_SERVED: dict = {}
_SERVED_LOCK = threading.Lock()
SERVED_KEPT = 32


def _serve_doc(model, hw, engine, quant, kv_dtype, engine_version, gpus, isl, osl, ttft_ms, tpot_ms) -> dict:
    return serve(ServeQuery(model, hw, engine, quant=quant, kv_dtype=kv_dtype, isl=isl, osl=osl,
                            engine_version=engine_version, gpus=gpus, slo=SLO(ttft_ms=ttft_ms, tpot_ms=tpot_ms)))


def api_upload(q, data: bytes, uploads: Uploads) -> dict:
    """Store a config.json (kind=config) or the start of a GGUF file (kind=gguf, with ``size`` = the whole
    file's size) and check that it reads as a model."""
    size = 0
    if q.size is not None:
        if q.kind != "gguf":
            raise ApiError(422, "size= is for kind=gguf: the size of the whole GGUF file whose start you send", "size")
        if not len(data) <= q.size <= MAX_GGUF_SIZE:
            raise ApiError(400, f"size must be between the bytes sent ({len(data):,}) and {MAX_GGUF_SIZE:,}", "size")
        size = q.size
    name = q.name
    if q.kind == "config":
        try:        # finite numbers, nesting and digits capped: 100,000 '[' is a 400, not a RecursionError
            cfg = parse_json(Path("config.json"), data)
        except UserError as e:
            raise ApiError(400, e.message) from None
        if not isinstance(cfg, dict):
            raise ApiError(400, "config.json must be a JSON object")
        name = name or str(cfg.get("_name_or_path") or "").rstrip("/").rsplit("/", 1)[-1]
    ref, path = uploads.add(q.kind, data, name or "uploaded-model", size)
    try:
        spec = read_model(str(path))
    except Exception as e:                          # anything a bad file makes the reader raise is bad input
        uploads.remove(ref)
        msg = e.message if isinstance(e, UserError) else f"{type(e).__name__}: {e}"
        raise ApiError(400, f"cannot read the uploaded {q.kind}: {msg.replace(str(path), q.kind)}") from None
    return {"model": ref, "name": spec.name or spec.id, "params_b": round(spec.n_params / 1e9, 3),
            "n_layers": spec.n_layers, "n_heads": spec.n_heads, "n_kv_heads": spec.n_kv_heads,
            "d_model": spec.d_model, "vocab_size": spec.vocab_size}


def finite(obj):
    """JSON has no NaN or Infinity: make them null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj
