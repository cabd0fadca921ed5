"""FileStorage: the WeightStorage of a real file — the exact bytes of the tensors it holds.

Every tensor is grouped by (role, layer) (see ``classify``). A group holds the bytes of all its
tensors (a GPTQ projection: qweight + scales + qzeros + g_idx; an MoE layer: every expert) and
the logical elements of its weight tensors, so ``element_bytes`` is the group's real bytes per
weight and ``tensor_bytes`` the group's exact bytes when asked for its full shape (proportional
for a part of it, e.g. one expert).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from .classify import Part
from .tensor import TensorInfo

F32_BYTES = 4.0   # norms and biases that a file lacks are assumed F32, as llama.cpp keeps them

# A fused projection answers for its parts (Phi-3 attn_qkv, gpt-oss gate_up experts, ...).
FUSED = {
    "attn_q": "attn_qkv", "attn_k": "attn_qkv", "attn_v": "attn_qkv",
    "ffn_gate": "ffn_gate_up", "ffn_up": "ffn_gate_up",
    "ffn_gate_exps": "ffn_gate_up_exps", "ffn_up_exps": "ffn_gate_up_exps",
    "ffn_gate_shexp": "ffn_gate_up_shexp", "ffn_up_shexp": "ffn_gate_up_shexp",
}


@dataclass(frozen=True)
class Entry:
    tensor: TensorInfo
    part: Part
    elements: int       # logical weight elements (0 for aux tensors such as scales)


class FileStorage:
    """WeightStorage answering from the tensors of a file (see tokspeed.quant.storage)."""

    def __init__(self, name: str, entries: list[Entry]):
        self.name = name
        self.entries = entries
        self._bytes: dict = defaultdict(int)
        self._elems: dict = defaultdict(int)
        for e in entries:
            if e.part.role is None:
                continue
            for key in ((e.part.role, e.part.layer), (e.part.role, "*")):
                self._bytes[key] += e.tensor.n_bytes
                self._elems[key] += e.elements
        weights = [e for e in entries if e.part.role not in (None, "norm")]
        self._mean = (sum(e.tensor.n_bytes for e in weights) / max(1, sum(e.elements for e in weights))
                      if weights else 2.0)

    # ---- WeightStorage -----------------------------------------------------------------------
    def element_bytes(self, role: str, layer: int | None) -> float:
        for key in self._lookup_keys(role, layer):
            if self._elems.get(key):
                return self._bytes[key] / self._elems[key]
        return F32_BYTES if role == "norm" else self._mean

    def tensor_bytes(self, role: str, layer: int | None, rows: int, cols: int) -> float:
        key = (role, layer)
        if self._elems.get(key) == rows * cols:
            return float(self._bytes[key])          # the whole group, exactly
        return self.element_bytes(role, layer) * rows * cols

    # ---- totals ------------------------------------------------------------------------------
    @property
    def resident_bytes(self) -> int:
        return sum(e.tensor.n_bytes for e in self.entries)

    @property
    def unmodelled_bytes(self) -> int:
        """Bytes of tensors outside the decoder roles (vision/audio towers, rope tables, unknown
        layer weights): resident in memory, but no ModelSpec role asks for them."""
        return sum(e.tensor.n_bytes for e in self.entries if e.part.role is None)

    def has(self, role: str, layer: int | None = None) -> bool:
        return bool(self._bytes.get((role, "*" if layer is None else layer)))

    def _lookup_keys(self, role, layer):
        yield (role, layer)
        if role in FUSED:
            yield (FUSED[role], layer)
        yield (role, "*")
        if role in FUSED:
            yield (FUSED[role], "*")
        if role == "output":                         # tied: the LM head is the embedding
            yield ("token_embd", None)

    def type_counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for e in self.entries:
            out[e.tensor.dtype] += 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def dominant_dtype(entries: list[Entry]) -> str:
    """The type holding most weight bytes (a file without a declared quant)."""
    c = Counter()
    for e in entries:
        if e.part.kind == "weight" and e.part.role not in (None, "norm"):
            c[e.tensor.dtype] += e.tensor.n_bytes
    return c.most_common(1)[0][0] if c else ""
