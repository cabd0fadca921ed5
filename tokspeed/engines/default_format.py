"""The weight format assumed when none is named: the one people would actually run.

- A runtime with a download default in ``tokspeed/quant/formats.toml`` ``[defaults]`` (llama.cpp-family engines:
  every llama.cpp backend, ollama, lm-studio run the GGUF people download, the type Ollama's library tags by
  default) runs that format, or the model's released format where that is smaller (gpt-oss ships MXFP4 experts:
  its GGUF is MXFP4, 4.25 bits per weight against the 4-bit K-quant mix's ~4.9).
- Every other engine runs the checkpoint as released: ``ModelSpec.released_format`` (FP8 for DeepSeek-V3/R1,
  MXFP4 for gpt-oss; BF16 otherwise, with a source in the catalog entry), falling back along the table's
  ``fallbacks`` where the engine does not run the released format on the device.

``default_quant`` returns the format and one line saying why it was assumed (the output states it).
"""

from __future__ import annotations

from ..derived import derived
from ..errors import UserError
from ..ledger import resident_weight_bytes
from ..quant.format_table import download_default, fallbacks
from ..quant.schemes import scheme_for
from .compat import runtime_of, supported_formats


def released_format(spec) -> str:
    """The format the model's authors released its weights in (BF16 unless the catalog says otherwise)."""
    return (getattr(spec, "released_format", "") or "BF16").upper()


def _weights(spec, quant: str) -> float:
    return resident_weight_bytes(spec, scheme_for(quant, spec))


def default_quant(spec, engine, hw) -> tuple[str, str]:
    """(format, why) for a model given without ``quant``: see the module docstring. ``engine`` is a name or
    an EngineProfile (its name), ``hw`` the device (what the engine runs there; None: any device, the released
    format taken as runnable). A function of the frozen spec, the engine's name and the frozen device: kept on
    the spec (``tokspeed.derived``) per (engine name, device), at most KEPT_MAX of them (a server answering for
    many devices read from files keeps a bounded number, not one per request)."""
    kept = derived(spec).setdefault("default_quant", {})
    key = (getattr(engine, "name", engine), hw)
    hit = kept.get(key)
    if hit is None:
        if len(kept) >= KEPT_MAX:
            kept.clear()
        hit = kept[key] = _default_quant(spec, engine, hw)
    return hit


KEPT_MAX = 64       # (engine, device) answers kept per model


def _default_quant(spec, engine, hw) -> tuple[str, str]:
    released = released_format(spec)
    try:
        runs = set(supported_formats(engine, hw)) if hw is not None else {released}
    except UserError:
        runs = set()
    name = getattr(engine, "name", engine)
    download = download_default(runtime_of(engine))
    if download:
        if released in runs and released != download:
            try:
                if _weights(spec, released) < _weights(spec, download):
                    return released, (f"{released}: the format {spec.id} is released in, smaller than "
                                      f"{download} (the file people download)")
            except UserError:
                pass
        return download, f"{download}: the file people download for {name}"
    if not runs or released in runs:
        return released, f"{released}: the format {spec.id} is released in"
    for q in fallbacks():
        if q in runs:
            return q, f"{q}: {spec.id} is released in {released}, which {name} does not run on this device"
    return released, f"{released}: the format {spec.id} is released in"
