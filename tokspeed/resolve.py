"""Turn a MODEL argument into a ModelSpec (and, for real files, their exact WeightStorage).

MODEL may be a catalog id, a config.json, a Hugging Face folder (or a repo id in the local HF
cache), a .gguf / .safetensors file or ``ollama:NAME[:TAG]``. Files are read by
``tokspeed.files`` (headers only).

It sits above both ``tokspeed.models`` (specs, catalog) and ``tokspeed.files`` (which build specs), so
neither package imports the other in a cycle: files -> models, resolve -> both.
"""

from __future__ import annotations

import os
from pathlib import Path

from .models.catalog import get_model
from .models.hf_config import spec_from_path
from .models.spec import ModelSpec


FILE_SUFFIXES = (".gguf", ".safetensors", ".json", ".toml")


def resolve_model(arg) -> tuple[ModelSpec, object | None]:
    """(spec, storage) where storage is a WeightStorage read from a file, or None for a catalog
    entry / bare config (the quant scheme then decides the bytes)."""
    if isinstance(arg, ModelSpec):
        return arg, None
    if isinstance(getattr(arg, "spec", None), ModelSpec) and hasattr(arg, "storage"):
        return arg.spec, arg.storage     # already resolved (a spec with its storage, e.g. tokspeed.advise.runs_here's)
    text = str(arg)
    if ("/" not in text and ":" not in text and "\\" not in text and not text.lower().endswith(FILE_SUFFIXES)
            and not os.path.exists(os.path.expanduser(text))):
        # not a file, folder, repo id or ollama reference: a catalog id (skips the file probes)
        return get_model(text), None
    from .files.loader import open_model_file  # lazy: start-up time (the file readers load only when MODEL names a file)

    mf = open_model_file(arg)
    if mf is not None:
        return mf.spec, mf.storage
    text = str(arg)
    p = Path(text).expanduser()
    if p.exists():
        return spec_from_path(p), None
    return get_model(text), None
