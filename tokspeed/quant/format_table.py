"""The weight-format table (``formats.toml``): every ``--quant`` name and what the rest of the package asks of it.

One row per format: its kernel group, bits per weight, llama.cpp ftype (main GGML type, file-type id), uniform
layout, the engine lists that load it, whether ``fit`` / ``alternatives`` try it, its place among the 4-bit
formats, llama.cpp's published perplexity increase and a source. The GGML block types (id, block, bytes) sit in
the same file. Code asks these functions; no other module lists format names.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("formats.toml")
QUALITY_SOURCE = "llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS (vendored in llama-cpp-python 0.3.36)"
OTHER = "other"     # in `alternatives`: every runtime no row names


@dataclass(frozen=True)
class FormatRow:
    name: str
    group: str
    bits: float
    source: str
    main_type: str = ""
    ftype_id: int | None = None
    mix_of: str = ""
    ik: str = ""
    layout: tuple = ()                      # ((key, value), ...): linear, embedding, lm_head, small, experts, ...
    engine_lists: tuple = ()
    fit: tuple = ()
    alternatives: tuple = ()
    four_bit: int = 0
    help: bool = True
    offered: bool = True
    ppl: tuple = ()                         # (ppl_delta, file GB, model)
    gemm: str = ""                          # a server engine's GEMM kind (tokspeed.serving.gemm_device); "" = 16-bit
    torch_dtype: str = ""                   # the torch dtype the reference decoder loads it as; "" = it cannot
    extra: dict = field(default_factory=dict, compare=False, hash=False)


LAYOUT_KEYS = ("linear", "embedding", "lm_head", "small", "experts", "row_scale_bytes")


@lru_cache(maxsize=1)
def _data() -> dict:
    return tomllib.loads(TABLE.read_text())


def _row(name: str, d: dict) -> FormatRow:
    ppl = (d["ppl_delta"], d["ppl_file_gb"], d["ppl_model"]) if "ppl_delta" in d else ()
    return FormatRow(name=name, group=d["group"], bits=float(d["bits"]), source=d["source"],
                     main_type=d.get("main_type", ""), ftype_id=d.get("ftype_id"), mix_of=d.get("mix_of", ""),
                     ik=d.get("ik", ""), layout=tuple((k, d[k]) for k in LAYOUT_KEYS if k in d),
                     engine_lists=tuple(d.get("engine_lists", ())), fit=tuple(d.get("fit", ())),
                     alternatives=tuple(d.get("alternatives", ())), four_bit=int(d.get("four_bit", 0)),
                     help=d.get("help", True), offered=d.get("offered", True), ppl=ppl,
                     gemm=d.get("gemm", ""), torch_dtype=d.get("torch_dtype", ""))


@lru_cache(maxsize=1)
def rows() -> dict[str, FormatRow]:
    """Every format row by name, in table order."""
    return {name: _row(name, d) for name, d in _data()["format"].items()}


def row(name: str) -> FormatRow | None:
    return rows().get(str(name).strip().upper())


@lru_cache(maxsize=1)
def ggml_types() -> dict[str, dict]:
    """GGML block types: name -> {"id", "block", "bytes"} (``block``/``bytes`` absent where not known here)."""
    return dict(_data()["ggml"])


def help_names() -> list[str]:
    """The ``--quant`` names shown in help and errors: the rows, then the patterns a parser also takes."""
    return [n for n, r in rows().items() if r.help] + list(_data()["patterns"]["help"])


def offered_names() -> list[str]:
    """The concrete names offered where a list of runnable formats is asked for."""
    return [n for n, r in rows().items() if r.offered]


def gguf_ftypes() -> dict[str, str]:
    """llama.cpp ftype -> the GGML type of a 2-D weight (its main type)."""
    return {n: r.main_type for n, r in rows().items() if r.main_type}


def ud_mixes() -> dict[str, str]:
    """Unsloth UD suffix (``Q4_K_XL``) -> the ftype whose mix it takes."""
    return {n[3:]: r.mix_of for n, r in rows().items() if r.mix_of}


def ik_ftypes() -> tuple[str, ...]:
    return tuple(n for n, r in rows().items() if r.ik)


def ftype_name(ftype_id: int) -> str:
    """A GGUF's ``general.file_type`` (LLAMA_FTYPE) as the name users know; "" when no row has it."""
    return next((n for n, r in rows().items() if r.ftype_id == ftype_id), "")


@lru_cache(maxsize=None)
def gemm_kind(name: str) -> str:
    """A server engine's GEMM kind for weights in format ``name`` (``w8a8-fp8``, ``mx-fp4``, ``nv-fp4``); "" for the
    formats its GEMMs run at 16 bits (or an unknown name)."""
    r = row(name)
    return r.gemm if r is not None else ""


@lru_cache(maxsize=None)
def engine_list(name: str) -> tuple[str, ...]:
    """The members of a named list of ``engines/capabilities.toml`` (``@gguf``): rows, then its globs."""
    return tuple(n for n, r in rows().items() if name in r.engine_lists) + tuple(_data()["engine_lists"][name])


def fit_formats(runtime: str) -> tuple[str, ...] | None:
    """The formats ``tokspeed fit`` tries for a runtime, highest bits first (the bisection needs the order);
    None for a runtime no row names."""
    got = [r for r in rows().values() if runtime in r.fit]
    return tuple(r.name for r in sorted(got, key=lambda r: -r.bits)) if got else None


def fit_runtimes() -> list[str]:
    return list(dict.fromkeys(e for r in rows().values() for e in r.fit))


def alternative_formats(runtime: str) -> tuple[str, ...]:
    """The formats ``alternatives`` tries for a runtime (table order): those naming it, else those for OTHER."""
    named = {e for r in rows().values() for e in r.alternatives}
    key = runtime if runtime in named else OTHER
    return tuple(n for n, r in rows().items() if key in r.alternatives)


def four_bit_formats() -> tuple[str, ...]:
    """The 4-bit formats ``explain`` offers as its "Q4" lever, in the order an engine is asked for them."""
    return tuple(n for n, r in sorted(rows().items(), key=lambda kv: kv[1].four_bit) if r.four_bit)


def download_default(runtime: str) -> str:
    """The format assumed for a runtime when none is named ("" for a runtime that runs the released format)."""
    got = _data()["defaults"].get(runtime, "")
    return got if isinstance(got, str) else ""


def quant_help() -> str:
    """The ``--quant`` help line: examples from the table and the defaults it states."""
    d = _data()["defaults"]
    downloads = " / ".join(f"{v} or a smaller released format for {k}-family engines" for k, v in d.items()
                           if isinstance(v, str))
    return (f"weight format: {' '.join(d['help_examples'])} ... (default: the released format for server engines, "
            f"{downloads}; the output says which)")


def torch_dtypes() -> dict[str, str]:
    """The formats the torch reference decoder (``tokspeed measure``) runs -> their torch dtype names."""
    return {n: r.torch_dtype for n, r in rows().items() if r.torch_dtype}


def torch_default(device: str) -> str:
    """The format the torch reference decoder assumes on ``device`` (``cpu``, ``cuda[:N]``) when none is named."""
    return _data()["torch"]["cuda" if str(device).startswith("cuda") else "cpu"]


def fallbacks() -> tuple[str, ...]:
    return tuple(_data()["defaults"]["fallbacks"])


def converted_type() -> str:
    """The GGML type a GGUF conversion writes matrices at, kept by tensors llama-quantize leaves alone."""
    return _data()["defaults"]["converted"]


def quality_for(quant: str) -> dict | None:
    """``{"ppl_delta", "measured_on", "source"}`` for a llama.cpp type with a published figure, else None."""
    r = row(quant)
    if r is None or not r.ppl:
        return None
    return {"ppl_delta": r.ppl[0], "measured_on": r.ppl[2], "source": QUALITY_SOURCE}


def group_prefixes() -> dict[str, tuple[str, ...]]:
    return {g: tuple(p) for g, p in _data()["group_prefixes"].items()}


def layout(name: str) -> dict | None:
    """The uniform layout of a row (``linear``, ``embedding`` ... storage names), None for a row without one."""
    r = row(name)
    return dict(r.layout) if r is not None and r.layout else None
