"""GGML tensor type ids (as stored in a GGUF file) -> type names; sizes from ``tokspeed.quant.formats``.

The ids are ggml's ``enum ggml_type`` (``tokspeed/quant/formats.toml`` ``[ggml]``) (mirrored in ``gguf.constants.GGMLQuantizationType``; a test
checks the two agree). Bytes per block come from ``tokspeed.quant.formats.GGML`` — one table of
block sizes for the whole package. Ids without a size there (types newer than that table) are
reported as unsupported by the reader.
"""

from __future__ import annotations

from ..quant.format_table import ggml_types
from ..quant.formats import GGML

GGML_TYPE_NAMES: dict[int, str] = {t["id"]: name for name, t in ggml_types().items()}

# id: (name, block_size, type_size) for the types whose block size tokspeed knows
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    tid: (name, GGML[name].block, int(GGML[name].block_bytes))
    for tid, name in GGML_TYPE_NAMES.items() if name in GGML
}
