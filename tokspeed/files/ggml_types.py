"""GGML tensor type ids (as stored in a GGUF file) -> type names; sizes from ``tokspeed.quant.formats``.

The ids are ggml's ``enum ggml_type`` (mirrored in ``gguf.constants.GGMLQuantizationType``; a test
checks the two agree). Bytes per block come from ``tokspeed.quant.formats.GGML`` — one table of
block sizes for the whole package. Ids without a size there (types newer than that table) are
reported as unsupported by the reader.
"""

from __future__ import annotations

from ..quant.formats import GGML

GGML_TYPE_NAMES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
    16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
    23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
    34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0",
}

# id: (name, block_size, type_size) for the types whose block size tokspeed knows
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    tid: (name, GGML[name].block, int(GGML[name].block_bytes))
    for tid, name in GGML_TYPE_NAMES.items() if name in GGML
}
