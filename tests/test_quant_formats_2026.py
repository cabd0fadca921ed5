"""Formats people download in 2026: every llama.cpp ftype, ik_llama.cpp's IQ*_K, Unsloth UD-*, MLX, NVFP4, FP8
block. Bytes per weight computed here by hand from each format's definition (the block structs of ggml-common.h,
MLX's affine groups, NVFP4's scales), not read back from the code."""

import pytest

from tokspeed.errors import UserError
from tokspeed.ledger import resident_weight_bytes
from tokspeed.quant import formats
from tokspeed.quant.schemes import canonical, scheme_for
from tokspeed.resolve import resolve_model

QK_K = 256
HALF = 2


@pytest.mark.parametrize("name,block_bytes", [
    # mainline ggml-common.h
    ("IQ2_XXS", HALF + QK_K // 8 * 2),                              # d + qs[QK_K/8] uint16
    ("IQ2_XS", HALF + QK_K // 8 * 2 + QK_K // 32),                  # + scales[QK_K/32]
    ("IQ2_S", HALF + QK_K // 4 + QK_K // 32 + QK_K // 32),          # d + qs[QK_K/4] + qh[QK_K/32] + scales[QK_K/32]
    ("IQ3_XXS", HALF + 3 * QK_K // 8),
    ("IQ3_S", HALF + QK_K // 4 + QK_K // 32 + QK_K // 8 + QK_K // 64),
    ("IQ1_S", HALF + QK_K // 8 + QK_K // 32 * 2),                   # qh[QK_K/32] uint16
    ("IQ1_M", QK_K // 8 + QK_K // 16 + QK_K // 32),
    ("IQ4_XS", HALF + 2 + QK_K // 64 + QK_K // 2),
    ("TQ1_0", (QK_K - 4 * QK_K // 64) // 5 + QK_K // 64 + HALF),
    ("TQ2_0", QK_K // 4 + HALF),
    ("Q3_K", QK_K // 8 + QK_K // 4 + 12 + HALF),                    # hmask + qs + scales[12] + d
    ("Q2_K", QK_K // 16 + QK_K // 4 + 2 * HALF),
    # ik_llama.cpp ggml-common.h
    ("IQ2_K", HALF + 2 + QK_K // 32 + QK_K // 4),
    ("IQ2_KS", 2 + QK_K // 64 + QK_K // 4),
    ("IQ3_K", HALF + 2 * 2 + QK_K // 32 + QK_K // 4 + QK_K // 8),
    ("IQ4_K", HALF + 2 + QK_K // 2 + 3 * QK_K // 64),
    ("IQ4_KS", QK_K // 32 + QK_K // 2),
    ("IQ5_K", HALF + 2 + QK_K // 2 + QK_K // 8 + 3 * QK_K // 64),
    ("IQ6_K", HALF + 2 + QK_K // 2 + QK_K // 4 + QK_K // 16),
    ("IQ2_KT", QK_K // 4 + QK_K // 64),
    ("IQ4_KT", QK_K // 2),
])
def test_block_bytes_from_the_structs(name, block_bytes):
    f = formats.ggml(name)
    assert f.block == QK_K
    assert f.block_bytes == block_bytes


def test_ik_row_scale_is_counted_per_row():
    # IQ4_KS: a float row scale (row_meta_size 4) before 4096 / 256 = 16 blocks of 136 bytes
    assert formats.ggml("IQ4_KS").tensor_bytes(10, 4096) == 10 * (4 + 16 * 136)


@pytest.mark.parametrize("bits,bpw", [(3, 3.5), (4, 4.5), (6, 6.5), (8, 8.5)])
def test_mlx_affine_bits(bits, bpw):
    # group 64: bits x 64 + FP16 scale (16 bits) + FP16 bias (16 bits), over 64 weights
    assert scheme_for(f"MLX-{bits}BIT").format_for("attn_q", 0, 4096).bits_per_weight == bpw
    assert (64 * bits + 32) / 64 == bpw


def test_nvfp4_and_fp8_block():
    # 16 x 4-bit E2M1 + one 8-bit E4M3 scale = 72 bits / 16 = 4.5
    assert scheme_for("NVFP4").format_for("ffn_up", 0, 4096).bits_per_weight == 4.5
    assert scheme_for("NVFP4").format_for("token_embd", None, 4096).name == "BF16"
    # one FP32 scale per 128 x 128 tile: 8 + 32 / 16384 bits
    assert scheme_for("FP8-BLOCK").format_for("ffn_up", 0, 4096).bits_per_weight == pytest.approx(8 + 32 / 16384)
    # MXFP4: 32 x 4 bits + one E8M0 byte = 136 / 32
    assert formats.ggml("MXFP4").bits_per_weight == 4.25


@pytest.mark.parametrize("spelling,name", [("mlx 4-bit", "MLX-4BIT"), ("4bit", "MLX-4BIT"), ("mlx-q8", "MLX-8BIT"),
                                           ("ud-q4_k_xl", "UD-Q4_K_XL"), ("iq2_xxs", "IQ2_XXS"),
                                           ("IQ4_K_R4", "IQ4_K"), ("nvfp4", "NVFP4"), ("q3_k_s", "Q3_K_S")])
def test_spellings(spelling, name):
    assert canonical(spelling) == name


def test_mix_rules_from_llama_quant():
    # llama-quant.cpp: Q3_K_L puts attn_v, ffn_down and attn_output at Q5_K, the rest Q3_K
    s = scheme_for("Q3_K_L")
    assert [s.format_for(r, 10, 4096).name for r in ("attn_v", "ffn_down", "attn_output", "ffn_up")] == \
        ["Q5_K", "Q5_K", "Q5_K", "Q3_K"]
    # IQ2_XXS: output Q5_K, token_embd Q2_K, attn_v Q4_K at GQA >= 4, first eighth of ffn_down Q2_K
    spec = resolve_model("llama-3.1-8b")[0]        # 32 heads / 8 KV heads
    s = scheme_for("IQ2_XXS", spec)
    assert s.format_for("output", None, 4096).name == "Q5_K"
    assert s.format_for("token_embd", None, 4096).name == "Q2_K"
    assert s.format_for("attn_v", 5, 4096).name == "Q4_K"
    assert s.format_for("ffn_down", 3, 14336).name == "Q2_K"
    assert s.format_for("ffn_down", 4, 14336).name == "IQ2_XXS"
    # IQ2_M's default type is IQ2_S (llama_model_quantize_impl), IQ2_S's is IQ2_XS
    assert scheme_for("IQ2_M").format_for("ffn_up", 10, 4096).name == "IQ2_S"
    assert scheme_for("IQ2_S").format_for("ffn_up", 10, 4096).name == "IQ2_XS"


def test_published_llama_3_1_8b_sizes():
    # bartowski/Meta-Llama-3.1-8B-Instruct-GGUF file sizes (GB, 10^9 bytes): Q3_K_S 3.66, Q3_K_L 4.32, IQ2_M 2.95,
    # IQ3_M 3.78 (those rules do not depend on the importance matrix)
    spec = resolve_model("llama-3.1-8b")[0]
    for q, gb in (("Q3_K_S", 3.66), ("Q3_K_L", 4.32), ("IQ2_M", 2.95), ("IQ3_M", 3.78)):
        assert resident_weight_bytes(spec, scheme_for(q, spec)) / 1e9 == pytest.approx(gb, rel=0.02), q


def test_stated_size_scales_the_mix():
    spec = resolve_model("llama-3.1-8b")[0]
    assert resident_weight_bytes(spec, scheme_for("UD-Q4_K_XL@5.2GB", spec)) == pytest.approx(5.2e9)
    assert resident_weight_bytes(spec, scheme_for("Q4_K_M@5GiB", spec)) == pytest.approx(5 * 2**30)
    with pytest.raises(UserError):
        scheme_for("Q4_K_M@lots", spec)


def test_ik_types_load_on_ik_llama_only():
    from tokspeed.engines.compat import supported_formats
    from tokspeed.hardware.catalog import get_hardware

    assert "IQ4_KS" not in supported_formats("llama.cpp-cuda", get_hardware("rtx-4090"))
