"""The weight format assumed when none is named: the one people would actually run.

- llama.cpp-family engines (every llama.cpp backend, ollama, lm-studio: runtime ``llama.cpp``) run GGUF
  files people download, and the file people download is ``Q4_K_M`` (the type Ollama's library tags by default
  and the "recommended" type of the common GGUF repos), or the model's released format where that is smaller
  (gpt-oss ships MXFP4 experts: its GGUF is MXFP4, 4.25 bits per weight against Q4_K_M's ~4.9).
- MLX (``mlx``, mlx-lm) runs MLX's own conversions people download (the mlx-community repos), and the one
  people download is ``MLX-4BIT``: mlx-lm's ``convert --quantize`` defaults (``q_bits=4``, ``q_group_size=64``,
  mlx_lm/convert.py), affine 4-bit with one scale and one bias per 64 weights in the model's 16-bit dtype,
  (64 x 4 + 2 x 16) / 64 = 4.5 bits per weight; the released format where that is smaller (gpt-oss's MXFP4).
- Every other engine (vLLM, SGLang, TensorRT-LLM, transformers, gpt-fast, ExLlamaV2, ``ideal``) runs the
  checkpoint as released: ``ModelSpec.released_format`` (FP8 for DeepSeek-V3/R1, MXFP4 for gpt-oss; BF16
  otherwise, with a source in the catalog entry), falling back to BF16, then F16, where the engine does not run the
  released format on the device.

``default_quant`` returns the format and one line saying why it was assumed (the output states it).
"""

from __future__ import annotations

DOWNLOAD_DEFAULT = "Q4_K_M"
MLX_DOWNLOAD_DEFAULT = "MLX-4BIT"      # mlx-lm convert's defaults: 4 bits, group size 64 (see above)
FALLBACKS = ("BF16", "F16")


def released_format(spec) -> str:
    """The format the model's authors released its weights in (BF16 unless the catalog says otherwise)."""
    return (getattr(spec, "released_format", "") or "BF16").upper()


def _weights(spec, quant: str) -> float:
    from ..ledger import resident_weight_bytes
    from ..quant.schemes import scheme_for

    return resident_weight_bytes(spec, scheme_for(quant, spec))


def default_quant(spec, engine, hw) -> tuple[str, str]:
    """(format, why) for a model given without ``quant``: see the module docstring. ``engine`` is a name or
    an EngineProfile (its name), ``hw`` the device (what the engine runs there; None: any device, the released
    format taken as runnable)."""
    from .compat import runtime_of, supported_formats
    from ..errors import UserError

    released = released_format(spec)
    try:
        runs = set(supported_formats(engine, hw)) if hw is not None else {released}
    except UserError:
        runs = set()
    name = getattr(engine, "name", engine)
    download = {"llama.cpp": (DOWNLOAD_DEFAULT, "the GGUF people download"),
                "mlx": (MLX_DOWNLOAD_DEFAULT, "MLX's own 4-bit conversion people download (mlx-lm convert -q: "
                                              "group 64, 4.5 bits per weight)")}.get(runtime_of(engine))
    if download is not None:
        fmt, what = download
        if released in runs and released != fmt:
            try:
                if _weights(spec, released) < _weights(spec, fmt):
                    return released, f"{released}: the format {spec.id} is released in, smaller than {fmt} ({what})"
            except UserError:
                pass
        return fmt, f"{fmt}: {what} for {name}"
    if not runs or released in runs:
        return released, f"{released}: the format {spec.id} is released in"
    for q in FALLBACKS:
        if q in runs:
            return q, f"{q}: {spec.id} is released in {released}, which {name} does not run on this device"
    return released, f"{released}: the format {spec.id} is released in"
