"""What an engine can run, from one table (``capabilities.toml``): device classes (and device architectures a
backend has no driver for, ``not_on_arch``), weight formats, KV-cache dtypes, the backend per vendor,
sliding-window support and the engine's own defaults.

- ``check(engine, hw, quant, kv_dtype)``: the engine name that will run (``llama.cpp`` resolved to its
  backend), or a ``UserError`` naming what would work instead.
- ``supported_formats(engine, hw)``: the ``--quant`` names the engine runs on that device.
- ``engines_for(hw, quant)``: the engines that run on a device (and load a format).
- ``runtime_of(engine)``: the code underneath (``llama.cpp`` for every llama.cpp backend, ollama, lm-studio).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import replace
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean
from ..quant.format_table import engine_list, offered_names
from .backends import backend_view
from .graph_kernels import kernel_shares
from .linear_mixer import mixer_kernels
from .moe_dispatch import dispatch_how, dispatch_kernels

TABLE = Path(__file__).parent / "capabilities.toml"


@lru_cache(maxsize=1)
def _table() -> dict:
    with open(TABLE, "rb") as f:
        return tomllib.load(f)


LLAMA_CPP_BACKEND = re.compile(r"(?:llama\.?cpp|llama[-_]cpp)\s*[-(\[/ ]\s*(\w+)\s*[)\]]?")
# llama.cpp's build flags as older tables name the backend ("llama.cpp (cuBLAS)")
BACKEND_SPELLINGS = {"hip": "rocm", "hipblas": "rocm", "cublas": "cuda"}
# a front end with its backend in brackets ("ollama (CUDA)"): the front end (it picks the backend by device); LM
# Studio's MLX engine is mlx
FRONT_END_BACKEND = re.compile(r"(ollama|lm ?studio|lm-studio)\s*\((\w+)\)")


def engine_key(name) -> str:
    """The table's name for an engine name as a table or a user writes it: case and spacing ignored,
    "llama.cpp (CUDA)" / "llama.cpp (cuBLAS)" / "llama.cpp-hip" -> llama.cpp-cuda / llama.cpp-rocm, "ollama (CUDA)"
    -> ollama, "LM Studio" -> lm-studio, "TRT-LLM" -> tensorrt-llm (the table's ``[aliases]``); anything else lower-cased
    as given."""
    return _key_of(str(name))


@lru_cache(maxsize=512)     # a prediction asks ~16 times; the table is read once
def _key_of(name: str) -> str:
    e = re.sub(r"\s+", " ", name.strip().lower())
    m = LLAMA_CPP_BACKEND.fullmatch(e)
    if m:
        e = "llama.cpp-" + BACKEND_SPELLINGS.get(m.group(1), m.group(1))
    m = FRONT_END_BACKEND.fullmatch(e)
    if m:
        e = "mlx" if m.group(2) == "mlx" and m.group(1) != "ollama" else m.group(1)
    return _table()["aliases"].get(e, e)


def engine_names() -> list[str]:
    """Every engine the table knows, in table order (``llama.cpp`` first among them)."""
    return list(_table()["engine"])


def default_engine(verb: str) -> str:
    """The engine ``verb`` (``predict``, ``serve``) assumes when none is named."""
    return _table()["default_engine"][verb]


def default_why(engine: str) -> str:
    """Why a verb that assumes ``engine`` when none is named does so (the row's ``why_default``; "" if it says
    nothing)."""
    return _table()["engine"].get(engine_key(engine), {}).get("why_default", "")


def engine_family(engine) -> str:
    """The row's ``family`` (``server``: a serving engine whose serving fit shares a per-vendor entry); "" for
    an engine with none or outside the table."""
    return _table()["engine"].get(engine_key(getattr(engine, "name", engine)), {}).get("family", "")


def llama_bench_backends() -> dict[str, str]:
    """llama-bench's backend words (its ``backends`` column, lower case) -> the engine that ran the test."""
    return dict(_table()["llama_bench"]["backends"])


def offload_cpu_engine() -> str:
    """The engine that runs an offload's CPU stage (the layers or experts left in RAM)."""
    return _table()["offload"]["cpu_engine"]


def engine_help() -> str:
    """The engine names for a help line: ``ideal, llama.cpp[-cuda|-metal|...], ollama, ...`` in table order."""
    names = engine_names()
    out = []
    for n in names:
        base = next((b for b in names if n != b and n.startswith(b + "-")), None)
        if base is None:
            variants = [m[len(n) + 1:] for m in names if m.startswith(n + "-")]
            out.append(n + (f"[-{'|-'.join(variants)}]" if variants else ""))
    return ", ".join(out)


def capability_table(engine: str, key: str) -> dict:
    """The ``key`` table of ``engine``'s capabilities row (``within_era``, ``host_until``, ...), a copy; {} for an
    engine without it or outside the table (a profile made by hand)."""
    try:
        return dict(capabilities(engine).get(key, {}))
    except UserError:
        return {}


def capabilities(engine: str) -> dict:
    """The table row of one engine (a name), with ``@lists`` expanded in ``weights``."""
    e = engine_key(engine)
    row = _table()["engine"].get(e)
    if row is None:
        names = engine_names()
        raise UserError(f"unknown engine {engine!r}", did_you_mean(e, names) or "choose one of " + ", ".join(names),
                        field="engine")
    weights = []
    for w in row.get("weights", []):
        weights += list(engine_list(w[1:])) if w.startswith("@") else [w]
    return {**row, "name": e, "weights": weights}


def runtime_of(engine) -> str:
    """``llama.cpp`` for every llama.cpp backend, ollama and lm-studio; an engine's own name otherwise.
    ``engine`` is a name or an EngineProfile; a name outside the table is its own runtime."""
    name = getattr(engine, "name", engine)
    row = _table()["engine"].get(engine_key(name))
    return row["runtime"] if row else str(name)


def engine_defaults(engine) -> dict:
    """What the engine does when the user sets nothing: ``context``, ``kv_dtype``, ``flash_attention``."""
    return dict(capabilities(getattr(engine, "name", engine)).get("defaults", {}))


def sliding_window_spec(engine, spec):
    """The model as this engine attends it: a sliding window the engine does not apply (gpt-fast; llama.cpp
    on Mistral v0.1, whose GGUF carries no window) becomes full attention."""
    row = _table()["engine"].get(engine_key(getattr(engine, "name", engine)))
    if not spec.n_sliding_layers or row is None:
        return spec
    if not row.get("sliding_window", True) or spec.family in row.get("full_attention_families", ()):
        if spec.has_global_shape:   # the sliding layers keep their own shape: a window as wide as the context
            return replace(spec, sliding_window=max(spec.max_context, spec.sliding_window))
        return replace(spec, sliding_window=0, n_sliding_layers=0)
    return spec


KNOWN_CLASSES = ("nvidia", "amd", "apple", "intel", "google", "cpu")


def device_class(hw) -> str:
    """``cpu`` for a CPU memory system (kind cpu), else the vendor in lower case (nvidia, amd, apple, intel,
    google); ``other`` for a vendor the table does not know (a custom device: every engine may run on it)."""
    if hw.kind == "cpu":
        return "cpu"
    v = hw.vendor.strip().lower()
    return v if v in KNOWN_CLASSES else "other"


def backend_for(engine: str, hw) -> str:
    """The engine that actually runs on ``hw``: an engine with a ``backend`` map (``llama.cpp``, ollama,
    lm-studio) picks the llama.cpp backend of the device class; any other engine is itself."""
    row = capabilities(engine)
    actual = _backend(row, hw)
    if actual is None:
        who = engines_for(hw)
        raise UserError(f"{row['name']} has no backend for {hw.name} ({_where(hw)})",
                        "engines that run there: " + ", ".join(who) if who else "use engine='ideal' for the roofline bound",
                        field="engine")
    return actual


def _backend(row: dict, hw) -> str | None:
    """The engine a table row runs as on ``hw`` (None: its backend map has no entry for the device class)."""
    backends = row.get("backend")
    return backends.get(device_class(hw)) if backends else row["name"]


def _runs_on(row: dict, hw) -> bool:
    devices, cls = row.get("devices", []), device_class(hw)
    return (("*" in devices or cls == "other" or cls in devices) and hw.kind in row.get("kinds", [])
            and not _excluded(row, hw))


def _excluded(row: dict, hw) -> bool:
    """The device is of an architecture the row's ``not_on_arch`` rules out (e.g. Vulkan on a CDNA Instinct)."""
    return getattr(hw, "arch", None) in row.get("not_on_arch", ())


def _loads(row: dict, quant: str) -> bool:
    return _matches(quant.strip().upper(), tuple(row["weights"]))


@lru_cache(maxsize=4096)
def _matches(q: str, patterns: tuple[str, ...]) -> bool:
    """Whether the format name ``q`` matches one of an engine's ``weights`` patterns (memoised: ``supported_formats``
    asks every format of every engine on each prediction that names none)."""
    return any(fnmatchcase(q, w.upper()) for w in patterns)


def _missing_feature(quant: str, hw) -> str:
    """The hardware field a format needs that this device lacks ("" if none)."""
    q = quant.strip().upper()
    for pattern, field in _table().get("needs", {}).items():
        if fnmatchcase(q, pattern.upper()) and not getattr(hw, field, 0):
            return field
    return ""


def engines_for(hw, quant: str | None = None) -> list[str]:
    """Engines that run on ``hw`` (and load ``quant`` there), ``ideal`` excluded."""
    out = []
    for name, row in _table()["engine"].items():
        if name == "ideal":
            continue
        backend = _backend(capabilities(name), hw)
        if backend is None:
            continue
        actual = capabilities(backend)
        if not _runs_on(actual, hw):
            continue
        if quant is not None and (not _loads(actual, quant) or _missing_feature(quant, hw)):
            continue
        out.append(name)
    return out


def supported_formats(engine, hw) -> list[str]:
    """The ``--quant`` names ``engine`` can run on ``hw`` (``formats.toml`` order, the rows
    ``offered``); [] when the engine does not run on the device at all."""
    backend = _backend(capabilities(getattr(engine, "name", engine)), hw)
    if backend is None:
        return []
    return list(_formats_of(backend, hw))


@lru_cache(maxsize=1024)
def _formats_of(backend: str, hw) -> tuple[str, ...]:
    """``supported_formats`` of one backend on one device (a frozen Hardware): memoised, as a prediction that names
    no format asks it every time."""
    row = capabilities(backend)
    if not _runs_on(row, hw):
        return ()
    return tuple(n for n in offered_names() if _loads(row, n) and not _missing_feature(n, hw))


def check(engine, hw, quant: str | None = None, kv_dtype: str | None = None) -> str:
    """The engine name that runs ``quant`` weights with a ``kv_dtype`` cache on ``hw`` (``llama.cpp``
    resolved to its backend); a UserError naming what would work when it cannot. ``engine`` is a name or
    an EngineProfile; a profile whose name the table does not know (a trial profile) passes."""
    name = engine_key(getattr(engine, "name", engine))
    if name not in _table()["engine"]:
        return name
    actual = backend_for(name, hw)
    row = capabilities(actual)
    if not _runs_on(row, hw):
        who = engines_for(hw)
        why = f": {row['not_on_why']}" if _excluded(row, hw) and row.get("not_on_why") else ""
        raise UserError(f"{name} does not run on {hw.name} ({_where(hw)}){why}",
                        ("engines that do: " + ", ".join(who)) if who else "use engine='ideal' for the roofline bound",
                        field="engine")
    if quant:
        q = quant.strip().upper()
        if not _loads(row, q):
            fmts = supported_formats(actual, hw)
            who = engines_for(hw, q)
            hint = f"{name} runs {_short(fmts)}" + (f"; {q} runs on {', '.join(who)}" if who else "")
            raise UserError(f"{name} cannot load {q} weights", hint, field="quant")
        field = _missing_feature(q, hw)
        if field:
            alts = [f for f in ("BF16", "F16", "INT8", "Q8_0", "AWQ-4B", "Q4_K_M") if f in supported_formats(actual, hw)]
            raise UserError(f"{q} weights need {field.replace('_tflops', '').upper()} tensor cores, which {hw.name} lacks "
                            f"({field} = 0)", "use " + " or ".join(alts[:3]) if alts else "choose another format")
    if kv_dtype:
        k = kv_dtype.strip().lower()
        if k not in row.get("kv_dtypes", []):
            raise UserError(f"{name} has no {k} KV cache", "choose `kv_dtype` " + " | ".join(row.get("kv_dtypes", [])),
                            field="kv_dtype")
    return actual


# FP8 weights whose GEMMs take FP8 activations, quantised before each GEMM: per tensor (FP8) or per 1x128 token
# group for 128x128 block-scaled weights (FP8-BLOCK: vLLM's per_token_group_quant_fp8, fused the same way)
FP8_ACTIVATION_FORMATS = ("FP8", "FP8-BLOCK")


def kernels_of(engine) -> dict:
    """An engine's (a profile or a name) capabilities ``kernels`` table; {} where it has none."""
    return _table()["engine"].get(engine_key(getattr(engine, "name", engine)), {}).get("kernels", {})


def _build_month(engine, month: str | None) -> str:
    """``month``, or where None the engine profile's ``build_month`` ("" = today's build)."""
    return getattr(engine, "build_month", "") if month is None else month


@lru_cache(maxsize=256)
def mixer_graph(engine_name: str) -> str:
    """The graph an engine runs a linear mixer in (capabilities ``kernels.linear_mixer``: ``ggml``, ``ggml-cuda``), ""
    for one that runs none of llama.cpp's (``linear_mixer.graph_state_bytes``)."""
    return kernels_of(engine_name).get("linear_mixer", "")


def unmodelled_kernels(engine, spec, quant: str, month: str | None = None) -> int:
    """Kernels per forward pass the operator ledger does not list but the engine launches (capabilities
    ``kernels``): MoE dispatch (routing top-k, block alignment/permutation, weighted sum) per MoE layer
    (``moe_dispatch.dispatch_kernels``), the launches of llama.cpp's graph for a linear-mixer layer beyond the
    ledger's (``linear_mixer.mixer_kernels``), both in the build of ``month`` (None = the engine profile's
    ``build_month``) and the activation quantisation before
    every FP8 GEMM. Each costs the engine's per-kernel ``launch_s``."""
    k = kernels_of(engine)
    if not k or spec is None:
        return 0

    month = _build_month(engine, month)
    n = dispatch_kernels(k, spec, month) + mixer_kernels(k, spec, month)
    if (quant or "").strip().upper() in FP8_ACTIVATION_FORMATS:
        attn = 5 if spec.is_mla and spec.q_lora_rank else 4
        if k.get("fp8_quant_fused"):
            # the quantisation of a GEMM input made by an RMSNorm or SiLU-and-mul is fused into that kernel
            # (vLLM's compile fusion passes: RMSNorm + quant, activation + quant): only o_proj's input (the
            # attention output) and the fused-MoE kernel's two inputs keep a kernel of their own
            gemms = spec.n_layers + 2 * spec.n_moe_layers
        else:
            gemms = spec.n_layers * (attn + (3 if spec.gated_mlp else 2)) + 2 * spec.n_moe_layers
        n += k.get("per_fp8_gemm", 0) * gemms
    return n


def moe_dispatch_how(engine, spec, month: str | None = None) -> str:
    """``moe_dispatch.dispatch_how`` under ``engine``'s capabilities ``kernels`` in the build of ``month`` (None:
    the profile's ``build_month``)."""
    k = kernels_of(engine)
    return dispatch_how(k, spec, _build_month(engine, month)) if k and spec else ""


def runnable(profile, hw, quant: str | None = None, kv_dtype: str | None = None, spec=None):
    """``check`` the combination, then return (profile, device) as the engine runs it: an engine on a SoC's
    CPU cluster (``cpu_cluster``, llama.cpp-cpu) sees ``hw.cpu_cluster()`` (its CPU bandwidth, no GPU FLOP/s)
    and its decode band widens by that bandwidth's uncertainty (root sum of squares), and on a CPU
    ``hw.simd_view()`` (no BF16 matrix-unit figure: its kernels do not use it); a CPU engine's
    per-node barrier (``sync_s_per_thread`` x the device's ``cpu_threads``) joins ``launch_s``; kernels the
    ledger does not list (``unmodelled_kernels``) add ``launch_s`` each to the profile's per-pass ``fixed_s``; those it
    lists but the engine fuses (``graph_kernels.kernel_shares``) are counted as the engine launches them."""

    backend = check(profile, hw, quant, kv_dtype)       # the backend that runs: ollama -> cpu
    row = _table()["engine"].get(backend, {})
    hw = backend_view(backend, hw, quant)   # its prompt matmuls on the matrix units or the vector ALUs (backends.py)
    if row.get("cpu_cluster"):
        view = hw.cpu_engine_view()     # a SoC's CPU cluster; a CPU's SIMD view (not a probe's torch BF16 figure)
        if view.cpu_bandwidth_band_pct and view is not hw and hw.kind == "soc" and hasattr(profile, "decode_error_pct"):
            band = math.hypot(profile.decode_error_pct, view.cpu_bandwidth_band_pct)
            profile = replace(profile, decode_error_pct=band)
        hw = view
    if hasattr(profile, "with_barrier"):
        profile = profile.with_barrier(hw)   # a CPU engine: every graph node ends at a barrier of all threads
    extra = unmodelled_kernels(profile, spec, quant or "")
    if extra and hasattr(profile, "fixed_s"):
        profile = replace(profile, fixed_s=profile.fixed_s + extra * profile.launch_s)
    shares = kernel_shares(row.get("kernels", {}), spec)
    if shares and hasattr(profile, "kernel_shares"):
        profile = replace(profile, kernel_shares=shares)
    return profile, hw


def _where(hw) -> str:
    return f"{hw.vendor} {hw.kind}" if hw.kind != "cpu" else "a CPU memory system"


def _short(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" (+{len(names) - n} more)" if len(names) > n else "") if names else "nothing here"
