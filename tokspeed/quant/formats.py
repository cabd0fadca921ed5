"""Storage formats: bytes per block of weights.

GGML types are (weights per block, bytes per block) as defined by ggml's ``type_traits`` in
``ggml/src/ggml.c`` (mirrored in the ``gguf`` package as ``GGML_QUANT_SIZES``; a test checks the two
agree), read from the ``[ggml]`` table of ``formats.toml``. Non-GGML formats are expressed the same way, with their scale/zero overhead spelled out.
"""

from __future__ import annotations

from dataclasses import dataclass

from .format_table import ggml_types


@dataclass(frozen=True)
class Format:
    name: str
    block: int          # weights per block
    block_bytes: float  # bytes per block (including scales, mins, zeros)
    note: str = ""
    row_bytes: float = 0.0   # bytes stored once per row (ik_llama.cpp's row scale: ggml.c row_meta_size)

    @property
    def bytes_per_weight(self) -> float:
        return self.block_bytes / self.block

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.bytes_per_weight

    def tensor_bytes(self, rows: int, cols: int) -> float:
        """Bytes of a rows x cols tensor; rows of cols weights are stored in whole blocks."""
        blocks_per_row = -(-cols // self.block)
        return rows * (blocks_per_row * self.block_bytes + self.row_bytes)


GGML = {name: Format(name, t["block"], t["bytes"]) for name, t in ggml_types().items() if "block" in t}

# ik_llama.cpp's own GGML types (ikawrakow/ik_llama.cpp ggml/src/ggml-common.h, the static_asserts on each
# block_iq*_k / _ks / _kt / _kl / _kss struct; QK_K = 256 weights per block) and the per-row scale its ggml.c
# type_traits give some of them (row_meta_size, bytes per row: a float or fp16 row scale):
#   block_iq2_k   = d (2) + extra (2) + scales[QK_K/32] + qs[QK_K/4]               = 76  -> 2.375 bpw
#   block_iq2_ks  = extra (2) + scales[QK_K/64] + qs[QK_K/4]                       = 70  -> 2.1875 (+2 B/row)
#   block_iq2_kl  = scales_h (2) + scales_l[QK_K/64] + qs[QK_K/4] + qh[QK_K/16]    = 86  -> 2.6875 (+2 B/row)
#   block_iq3_k   = d (2) + extra (2) + scales_h (2) + scales_l[QK_K/32] + qs[QK_K/4] + qh[QK_K/8] = 110 -> 3.4375
#   block_iq3_ks  = extra (2) + scales[QK_K/64] + qs[QK_K/4] + qh[QK_K/8]          = 102 -> 3.1875 (+2 B/row)
#   block_iq4_k   = d (2) + extra (2) + scales_h[QK_K/64] + scales_l[QK_K/32] + qs[QK_K/2] = 144 -> 4.5
#   block_iq4_ks  = scales[QK_K/32] + qs[QK_K/2]                                   = 136 -> 4.25 (+4 B/row)
#   block_iq4_kss = qs[QK_K/8] uint32                                              = 128 -> 4.0  (+4 B/row)
#   block_iq5_k   = d (2) + extra (2) + scales_h[QK_K/64] + scales_l[QK_K/32] + qs[QK_K/2] + qh[QK_K/8] = 176 -> 5.5
#   block_iq5_ks  = scales[QK_K/32] + qs[QK_K/2] + qh[QK_K/8]                      = 168 -> 5.25 (+4 B/row)
#   block_iq6_k   = d (2) + extra (2) + scales[QK_K/16] + qs[QK_K/2] + qh[QK_K/4]         = 212 -> 6.625
#   block_iq1_kt  = sh[QK_K/32] + ql[QK_K/8] + qh[QK_K/16]                         = 56  -> 1.75 (+4 B/row)
#   block_iq2_kt  = scales[QK_K/64] + ql[QK_K/4]                                   = 68  -> 2.125 (+4 B/row)
#   block_iq3_kt  = scales[QK_K/64] + ql[QK_K/4] + qh[QK_K/8]                      = 100 -> 3.125 (+4 B/row)
#   block_iq4_kt  = qs[QK_K/8] uint32                                              = 128 -> 4.0  (+4 B/row)
IK = {name: Format(name, 256, b, "ik_llama.cpp ggml-common.h block_" + name.lower(), r) for name, (b, r) in {
    "IQ2_K": (76, 0), "IQ2_KS": (70, 2), "IQ2_KL": (86, 2), "IQ3_K": (110, 0), "IQ3_KS": (102, 2),
    "IQ4_K": (144, 0), "IQ4_KS": (136, 4), "IQ4_KSS": (128, 4), "IQ5_K": (176, 0), "IQ5_KS": (168, 4),
    "IQ6_K": (212, 0), "IQ1_KT": (56, 4), "IQ2_KT": (68, 4), "IQ3_KT": (100, 4), "IQ4_KT": (128, 4),
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


def mlx_affine(bits: int, group: int = 64) -> Format:
    """MLX affine quantization (``mlx.core.quantize``; mlx-lm ``convert --quantize`` defaults ``q_bits=4``,
    ``q_group_size=64`` in mlx_lm/convert.py): ``bits`` per weight packed in uint32 words plus one scale and one
    bias per group, both in the model's 16-bit dtype (BF16 for a BF16 checkpoint, 2 bytes either way):
    4-bit g64 = (64 x 4 + 2 x 16) / 64 = 4.5 bpw."""
    return Format(f"MLX-{bits}BIT", group, group * bits / 8 + 2 + 2,
                  f"MLX affine {bits}-bit, group {group}: 16-bit scale + bias per group, the model's dtype")


# NVFP4 (NVIDIA Blackwell; ModelOpt checkpoints): FP4 E2M1 values in blocks of 16 with one FP8 E4M3 scale each
# (16 x 0.5 + 1 = 9 bytes per 16 = 4.5 bpw) and one FP32 scale per tensor (negligible).
NVFP4 = Format("NVFP4", 16, 9, "E2M1 x 16 + one E4M3 scale per 16; FP32 per-tensor scale not counted")
# FP8 with block scales (DeepSeek-V3 / Qwen3 "FP8" checkpoints: weight_block_size [128, 128]): one FP32 scale per
# 128 x 128 tile, i.e. per 128 weights of a row 4 / 128 bytes on top of one byte per weight.
FP8_BLOCK = Format("FP8-BLOCK", 128, 128 + 4 / 128, "E4M3, one FP32 scale per 128x128 tile")


SPECIAL = {f.name: f for f in (FP8, INT8, NVFP4, FP8_BLOCK)}


def storage(name: str) -> Format:
    """A storage format by the name ``formats.toml``'s layouts use: a GGML type or one of ``SPECIAL``."""
    return SPECIAL[name] if name in SPECIAL else ggml(name)


def ggml(name: str) -> Format:
    """A GGML type by name: mainline llama.cpp's (``GGML``) or ik_llama.cpp's (``IK``)."""
    n = name.upper()
    return GGML[n] if n in GGML else IK[n]
