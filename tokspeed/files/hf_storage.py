"""The exact storage of Hugging Face safetensors weights, from the tensor headers and ``config.json``: the
logical elements of each tensor (packed GPTQ/AWQ integers unpacked) and the ``--quant`` name of the format.

Shared by a local folder (``loader.open_folder``) and a hub repository read over the network
(``hf_hub.open_hub_repo``).
"""

from __future__ import annotations

from .classify import classify_hf
from .hf_folder import quant_bits
from .safetensors_reader import DTYPE_BITS
from .storage import Entry, FileStorage, dominant_dtype
from .tensor import TensorInfo


def hf_storage(config: dict, tensors: list[TensorInfo]) -> FileStorage:
    """The FileStorage of a model's safetensors tensors, named by ``quant_label``."""
    method, bits = quant_bits(config)
    entries = [hf_entry(t, bits) for t in tensors]
    return FileStorage(quant_label(config, method, bits, dominant_dtype(entries)), entries)


def quant_label(config: dict, method: str, bits: int, dominant: str) -> str:
    """The quant name (tokspeed.quant.schemes) closest to the file's format; engines key on it."""
    q = config.get("quantization_config") or {}
    if method == "gptq":
        return f"GPTQ-{bits}B-G{q.get('group_size', 128)}"
    if method == "awq":
        return f"AWQ-{bits}B"
    if method == "mxfp4":
        return "MXFP4"
    if method in ("fp8", "fbgemm_fp8") or dominant.startswith("F8_"):
        return "FP8"
    if method:
        return f"INT{bits}" if bits else method.upper()
    return dominant


def hf_entry(t: TensorInfo, bits: int) -> Entry:
    """One tensor's entry: its role and its logical weight elements (0 for aux tensors such as scales)."""
    part = classify_hf(t.name)
    if part.kind == "aux":
        return Entry(t, part, 0)
    elements = t.n_elements
    stored = DTYPE_BITS[t.dtype]
    if part.kind == "weight" and bits and bits < stored and t.dtype in ("I32", "U32", "I8", "U8", "I16", "U16"):
        elements = elements * stored // bits         # packed: GPTQ/AWQ int32 holds 32/bits weights
    return Entry(t, part, elements)

