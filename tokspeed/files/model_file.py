"""ModelFile: what a real model file gives a prediction: its spec, the exact storage of its tensors, its kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..models.spec import ModelSpec
from .storage import FileStorage


@dataclass
class ModelFile:
    spec: ModelSpec
    storage: FileStorage | None
    kind: str                       # gguf | safetensors | config
    path: Path
    quant: str = ""                 # Q4_K_M, BF16, GPTQ-4bit, ...
    gguf: object = None             # GGUFFile (tokenizer metadata) when kind == gguf
    tokenizer_json: Path | None = None
    extra: dict = field(default_factory=dict)
