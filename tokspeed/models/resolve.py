"""Turn a MODEL argument into a ModelSpec (and, for real files, their exact WeightStorage).

MODEL may be a catalog id, a config.json, a Hugging Face folder, a .gguf file or ``ollama:NAME[:TAG]``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from .spec import ModelSpec


def resolve_model(arg) -> tuple[ModelSpec, object | None]:
    """(spec, storage) where storage is a WeightStorage read from a file, or None for a catalog
    entry / bare config (the quant scheme then decides the bytes)."""
    if isinstance(arg, ModelSpec):
        return arg, None
    text = str(arg)
    p = Path(text).expanduser()
    if text.startswith("ollama:") or p.suffix == ".gguf" or p.suffix == ".safetensors":
        raise UserError(f"reading {text!r} needs the model-file reader (not available yet)")
    if p.exists():
        if p.is_dir() and not (p / "config.json").is_file():
            raise UserError(f"{text}: a model folder needs a config.json")
        return ModelSpec.from_file(p), None
    from .catalog import get_model

    return get_model(text), None
