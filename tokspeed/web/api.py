"""The JSON API behind `tokspeed web`, as plain functions of query parameters (no HTTP in here).

Every bad input raises ``ApiError`` (or ``UserError``) and becomes a 4xx with a message; the server never
reads a path a client names: models are catalog ids or ``upload:<id>`` of a file the server stored itself,
hardware is a catalog id or ``custom`` with numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import threading
import uuid
from pathlib import Path

from ..errors import UserError, did_you_mean
from ..workload import DEFAULT_GEN, DEFAULT_PROMPT

# Upper limits keep one request cheap (the ledger is evaluated per 512-token micro-batch of a prefill).
LIMITS = {"prompt": 1 << 20, "gen": 1 << 20, "context": 1 << 24, "batch": 4096, "prefill": 1 << 20}
INT_DEFAULTS = {"prompt": DEFAULT_PROMPT, "gen": DEFAULT_GEN, "context": 0, "batch": 1}
CUSTOM_HW = {"bandwidth_gbps": (True, 1e5), "memory_gb": (True, 1e5), "fp16_tflops": (False, 1e5),
             "host_link_gbps": (False, 1e4)}
COMMON = {"model", "hardware", "quant", "kv_dtype", "engine", *CUSTOM_HW}
UPLOAD_LIMITS = {"config": 1 << 20, "gguf": 32 << 20}    # bytes: a config.json; the start of a GGUF (its header)
MAX_GGUF_SIZE = 1 << 42                                  # a declared GGUF file size (4 TiB)
MAX_UPLOADS = 64
UPLOAD_RE = re.compile(r"^upload:([0-9a-f]{32})$")
PLOT_KINDS = ("overview", "stages", "context", "memory")


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Uploads:
    """Files clients sent, kept in one private temporary folder under names the server chose."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="tokspeed-web-"))
        self.files: dict[str, Path] = {}
        self.lock = threading.Lock()

    def add(self, kind: str, data: bytes, name: str = "uploaded-model", size: int = 0) -> tuple[str, Path]:
        """Store ``data``; ``size`` > len(data) extends the file to the size the client declared for the
        whole GGUF, as a sparse hole (no disk used), so the header's tensor offsets check out."""
        if kind not in UPLOAD_LIMITS:
            raise ApiError(400, f"unknown upload kind {kind!r}: use kind=config (config.json) or kind=gguf")
        if len(data) > UPLOAD_LIMITS[kind]:
            raise ApiError(413, f"{kind} upload too large: {len(data):,} bytes (limit {UPLOAD_LIMITS[kind]:,})")
        uid = uuid.uuid4().hex
        sub = self.dir / uid / safe_name(name)       # the model id is the folder name (config) or file stem
        sub.mkdir(parents=True)
        path = sub / ("config.json" if kind == "config" else safe_name(name) + ".gguf")
        path.write_bytes(data)
        if size > len(data):
            os.truncate(path, size)
        with self.lock:
            self.files[uid] = path
            while len(self.files) > MAX_UPLOADS:
                old = next(iter(self.files))
                self._remove(self.files.pop(old))
        return f"upload:{uid}", path

    def path(self, ref: str) -> Path:
        m = UPLOAD_RE.match(ref)
        with self.lock:
            p = self.files.get(m.group(1)) if m else None
        if p is None:
            raise ApiError(404, f"no upload {ref!r} (uploads last while the server runs; upload the file again)")
        return p

    def remove(self, ref: str):
        p = self.path(ref)
        with self.lock:
            self.files.pop(UPLOAD_RE.match(ref).group(1), None)
        self._remove(p)

    def _remove(self, p: Path):
        import shutil

        upload_dir = p.parent.parent
        if upload_dir.parent == self.dir:
            shutil.rmtree(upload_dir, ignore_errors=True)

    def close(self):
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


def safe_name(name) -> str:
    """A model name fit for a folder name: letters, digits, '.', '_' and '-', at most 64 characters."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name or "")).strip(".-")[:64]
    return text or "uploaded-model"


# ---- parameters -----------------------------------------------------------------------------------
def one(params: dict, name: str, default=None):
    v = params.get(name)
    if isinstance(v, list):
        if len(v) > 1:
            raise ApiError(400, f"parameter {name!r} given {len(v)} times")
        v = v[0] if v else None
    if v is None or (isinstance(v, str) and not v.strip()):
        return default
    return v.strip() if isinstance(v, str) else v


def check_known(params: dict, allowed: set):
    unknown = sorted(set(params) - allowed)
    if unknown:
        hint = did_you_mean(unknown[0], sorted(allowed))
        raise ApiError(400, f"unknown parameter {unknown[0]!r}" + (f" ({hint})" if hint else
                                                                  f"; known: {', '.join(sorted(allowed))}"))


def get_int(params: dict, name: str, default: int, lo: int = 0) -> int:
    v = one(params, name)
    if v is None:
        return default
    try:
        n = int(str(v), 10)
    except ValueError:
        raise ApiError(400, f"{name} must be a whole number, got {v!r}") from None
    if n < lo:
        raise ApiError(400, f"{name} must be at least {lo}, got {n}")
    if n > LIMITS[name]:
        raise ApiError(400, f"{name} {n:,} is above this server's limit of {LIMITS[name]:,}")
    return n


def get_float(params: dict, name: str, required: bool, hi: float) -> float:
    v = one(params, name)
    if v is None:
        if required:
            raise ApiError(400, f"custom hardware needs {name}")
        return 0.0
    try:
        x = float(str(v))
    except ValueError:
        raise ApiError(400, f"{name} must be a number, got {v!r}") from None
    if not math.isfinite(x) or x < 0 or (required and x == 0) or x > hi:
        raise ApiError(400, f"{name} must be a {'positive' if required else 'non-negative'} number up to {hi:g}, "
                            f"got {v!r}")
    return x


def resolve_model_param(params: dict, uploads: Uploads):
    ref = one(params, "model")
    if ref is None:
        raise ApiError(400, "which model? give model=<catalog id> (see /api/models) or upload:<id>")
    if ref.startswith("upload:"):
        return str(uploads.path(ref))
    from ..models.catalog import model_ids, resolve_id

    mid = resolve_id(ref)
    if mid is None:
        hint = did_you_mean(ref, model_ids())
        raise ApiError(400, f"unknown model {ref!r}" + (f" ({hint})" if hint else "; see /api/models"))
    return mid


def resolve_hardware_param(params: dict):
    ref = one(params, "hardware")
    if ref is None:
        raise ApiError(400, "which hardware? give hardware=<catalog id> (see /api/hardware) or hardware=custom")
    if ref.lower() == "custom":
        from ..hardware.spec import Hardware

        vals = {k: get_float(params, k, req, hi) for k, (req, hi) in CUSTOM_HW.items()}
        return Hardware.from_dict({"id": "custom", "name": "custom device", "kind": "gpu", "vendor": "custom",
                                   **vals, "source": "web form"})
    if "/" in ref or "\\" in ref or ref.lower().endswith(".toml") or ref.lower() == "local":
        raise ApiError(400, f"hardware must be a catalog id or 'custom', got {ref!r}")
    from ..hardware.catalog import get_hardware

    return get_hardware(ref)


def common_kwargs(params: dict) -> dict:
    return dict(quant=one(params, "quant"), kv_dtype=one(params, "kv_dtype", "f16"),
                engine=one(params, "engine", "llama.cpp"))


# ---- endpoints --------------------------------------------------------------------------------------
def api_models(params: dict, uploads=None) -> dict:
    check_known(params, set())
    from ..models.catalog import all_models

    return {"models": [{"id": m.id, "name": m.name or m.id, "params_b": round(m.n_params / 1e9, 3),
                        "n_layers": m.n_layers, "n_kv_heads": m.n_kv_heads, "n_heads": m.n_heads,
                        "moe": m.is_moe, "source": m.source} for m in all_models()]}


def api_hardware(params: dict, uploads=None) -> dict:
    check_known(params, set())
    from ..hardware.catalog import all_hardware

    return {"hardware": [{"id": h.id, "name": h.name, "kind": h.kind, "vendor": h.vendor, "memory_gb": h.memory_gb,
                          "bandwidth_gbps": h.bandwidth_gbps, "fp16_tflops": h.fp16_tflops}
                         for h in all_hardware()]}


def api_options(params: dict, uploads=None) -> dict:
    """Choices for the form: quants, KV dtypes, engines."""
    check_known(params, set())
    from ..engines.profile import ENGINES
    from ..quant.kv import KV_BYTES
    from ..quant.schemes import NAMES

    return {"quant": [n for n in NAMES if "<" not in n], "kv_dtype": list(KV_BYTES), "engine": ENGINES}


def make_prediction(params: dict, uploads: Uploads):
    from ..predict import predict

    check_known(params, COMMON | set(INT_DEFAULTS))
    model = resolve_model_param(params, uploads)
    hw = resolve_hardware_param(params)
    ints = {k: get_int(params, k, d, 1 if k == "batch" else 0) for k, d in INT_DEFAULTS.items()}
    return predict(model, hw, **common_kwargs(params), **ints)


def api_predict(params: dict, uploads: Uploads) -> dict:
    return make_prediction(params, uploads).to_dict()


def make_explanation(params: dict, uploads: Uploads, with_levers: bool = True):
    from ..explain import explain

    check_known(params, COMMON | {"context", "batch", "prefill"})
    model = resolve_model_param(params, uploads)
    hw = resolve_hardware_param(params)
    return explain(model, hw, prefill=get_int(params, "prefill", 0), context=get_int(params, "context", 0),
                   batch=get_int(params, "batch", 1, 1), with_levers=with_levers, **common_kwargs(params))


def api_explain(params: dict, uploads: Uploads) -> dict:
    return make_explanation(params, uploads).to_dict()


_PLOT_LOCK = threading.Lock()   # matplotlib's font and text caches are shared between threads


def api_plot(kind: str, params: dict, uploads: Uploads) -> str:
    """An SVG chart. overview/memory take predict parameters, stages takes explain parameters,
    context takes predict parameters (its context is swept over the seeds' 1K..128K)."""
    if kind not in PLOT_KINDS:
        raise ApiError(404, f"no chart {kind!r}: one of {', '.join(PLOT_KINDS)}")
    from .. import plots
    from ..plots.verbs import hw_info, prediction_journeys

    if kind == "stages":
        expl = make_explanation(params, uploads, with_levers=False)
        with _PLOT_LOCK:
            return plots.to_svg(plots.stages_figure(expl.to_dict()))
    pred = make_prediction(params, uploads)
    if kind == "context":
        from ..predict import predict
        from ..report.html import SWEEP_CONTEXTS

        model = resolve_model_param(params, uploads)
        rows = [predict(model, pred.hw, quant=None if pred.quant == "file" else pred.quant, kv_dtype=pred.kv_dtype,
                        engine=pred.engine, prompt=0, gen=1, context=c, batch=pred.batch).to_dict()
                for c in SWEEP_CONTEXTS]
        with _PLOT_LOCK:
            return plots.to_svg(plots.context_figure(rows))
    with _PLOT_LOCK:
        if kind == "memory":
            return plots.to_svg(plots.memory_figure(pred.to_dict()))
        return plots.to_svg(plots.prediction_figure(pred.to_dict(), hw_info(pred.hw), prediction_journeys(pred)))


def api_upload(params: dict, data: bytes, uploads: Uploads) -> dict:
    """Store a config.json (kind=config) or the start of a GGUF file (kind=gguf, with ``size`` = the whole
    file's size) and check that it reads as a model."""
    check_known(params, {"kind", "name", "size"})
    kind = one(params, "kind", "config")
    name = one(params, "name")
    size = 0
    if one(params, "size") is not None:
        if kind != "gguf":
            raise ApiError(400, "size= is for kind=gguf: the size of the whole GGUF file whose start you send")
        try:
            size = int(one(params, "size"))
        except ValueError:
            raise ApiError(400, f"size must be a whole number of bytes, got {one(params, 'size')!r}") from None
        if not len(data) <= size <= MAX_GGUF_SIZE:
            raise ApiError(400, f"size must be between the bytes sent ({len(data):,}) and {MAX_GGUF_SIZE:,}")
    if kind == "config":
        try:
            cfg = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ApiError(400, f"config.json is not valid JSON: {e}") from None
        if not isinstance(cfg, dict):
            raise ApiError(400, "config.json must be a JSON object")
        name = name or str(cfg.get("_name_or_path") or "").rstrip("/").rsplit("/", 1)[-1]
    ref, path = uploads.add(kind, data, name or "uploaded-model", size)
    from ..resolve import resolve_model

    try:
        spec, _ = resolve_model(str(path))
    except (UserError, ValueError, TypeError) as e:
        uploads.remove(ref)
        msg = e.message if isinstance(e, UserError) else str(e)
        raise ApiError(400, f"cannot read the uploaded {kind}: {msg.replace(str(path), kind)}") from None
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
