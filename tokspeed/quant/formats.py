"""Storage formats: bytes per block of weights.

GGML types are (weights per block, bytes per block) as defined by ggml's ``type_traits`` in
``ggml/src/ggml.c`` (mirrored in the ``gguf`` package as ``GGML_QUANT_SIZES``; a test checks the two
agree). Non-GGML formats are expressed the same way, with their scale/zero overhead spelled out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str
    block: int          # weights per block
    block_bytes: float  # bytes per block (including scales, mins, zeros)
    note: str = ""

    @property
    def bytes_per_weight(self) -> float:
        return self.block_bytes / self.block

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.bytes_per_weight

    def tensor_bytes(self, rows: int, cols: int) -> float:
        """Bytes of a rows x cols tensor; rows of cols weights are stored in whole blocks."""
        blocks_per_row = -(-cols // self.block)
        return rows * blocks_per_row * self.block_bytes


GGML = {name: Format(name, b, s) for name, (b, s) in {
    "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "F64": (1, 8),
    "I8": (1, 1), "I16": (1, 2), "I32": (1, 4), "I64": (1, 8),
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24),
    "Q8_0": (32, 34), "Q8_1": (32, 40),
    "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176),
    "Q6_K": (256, 210), "Q8_K": (256, 292),
    "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74), "IQ2_S": (256, 82), "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110), "IQ1_S": (256, 50), "IQ1_M": (256, 56), "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136), "TQ1_0": (256, 54), "TQ2_0": (256, 66), "MXFP4": (32, 17),
}.items()}

# Formats outside GGUF, per element (block = 1) or per quantization group.
FP8 = Format("FP8", 1, 1, "E4M3/E5M2, one byte; per-tensor scale is negligible")
INT8 = Format("INT8", 1, 1, "weight-only int8 (per-channel scale counted separately per row)")


def int4_group(group: int, scale_bytes: float = 2.0, zero_bytes: float = 2.0, name: str = "") -> Format:
    """4-bit weights in groups of ``group`` with one scale and one zero per group.
    gpt-fast int4: bf16 scale + bf16 zero (2 + 2 bytes); GPTQ/AWQ: fp16 scale + packed 4-bit zero (2 + 0.5)."""
    return Format(name or f"INT4-G{group}", group, group / 2 + scale_bytes + zero_bytes,
                  f"4-bit, group {group}, scale {scale_bytes} B + zero {zero_bytes} B per group")


def exl2(bpw: float) -> Format:
    """ExLlamaV2 stores a target average bits per weight (scales included in the figure)."""
    return Format(f"EXL2-{bpw:g}", 8, bpw, f"EXL2 at {bpw:g} bits per weight on average")


def ggml(name: str) -> Format:
    return GGML[name.upper()]
