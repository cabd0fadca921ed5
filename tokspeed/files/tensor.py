"""TensorInfo: one tensor as a file header describes it (never its data)."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str              # GGML type name (Q4_K, F32, ...) or safetensors dtype (BF16, F8_E4M3, I32, ...)
    shape: tuple[int, ...]  # outermost first, like PyTorch: (rows, cols) with cols the contiguous input dim
    n_bytes: int            # exact bytes in the file
    offset: int = 0         # absolute byte offset of the data in its file
    file: str = ""          # which file (for sharded safetensors)

    @property
    def n_elements(self) -> int:
        return prod(self.shape) if self.shape else 1

    @property
    def cols(self) -> int:
        return self.shape[-1] if self.shape else 1

    @property
    def rows(self) -> int:
        return prod(self.shape[:-1]) if len(self.shape) > 1 else 1
