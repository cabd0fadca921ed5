"""Quant formats and llama.cpp mixes: exact storage, checked against published GGUF file sizes."""

import pytest

import tokspeed
from tokspeed.quant import formats
from tokspeed.quant.kv import kv_bytes
from tokspeed.quant.llamacpp_mix import use_more_bits
from tokspeed.quant.schemes import scheme_for

GIB = 2**30


def test_block_sizes_match_the_gguf_package():
    gguf = pytest.importorskip("gguf")
    for t, (block, size) in gguf.constants.GGML_QUANT_SIZES.items():
        if t.name in formats.GGML:
            f = formats.GGML[t.name]
            assert (f.block, f.block_bytes) == (block, size), t.name


@pytest.mark.parametrize("name, bpw", [("Q8_0", 8.5), ("Q4_0", 4.5), ("Q4_1", 5.0), ("Q5_0", 5.5), ("Q5_1", 6.0),
                                       ("Q2_K", 2.625), ("Q3_K", 3.4375), ("Q4_K", 4.5), ("Q5_K", 5.5),
                                       ("Q6_K", 6.5625), ("IQ4_XS", 4.25), ("MXFP4", 4.25)])
def test_bits_per_weight(name, bpw):
    # by hand: Q8_0 = 34 bytes / 32 weights, Q4_K = 144 / 256, MXFP4 = 17 / 32 ...
    assert formats.GGML[name].bits_per_weight == pytest.approx(bpw)


@pytest.mark.parametrize("model, quant, gib", [
    ("llama-2-7b", "F16", 12.55), ("llama-2-7b", "Q8_0", 6.67), ("llama-2-7b", "Q4_0", 3.56),
    ("llama-3.1-8b", "Q4_K_M", 4.58),
])
def test_published_gguf_sizes(model, quant, gib):
    p = tokspeed.predict(model, "rtx-4090", quant=quant, engine="ideal", prompt=0, gen=1)
    assert p.memory.weights_bytes / GIB == pytest.approx(gib, rel=0.015)


def test_q4_k_m_mix_rules():
    s = scheme_for("Q4_K_M")   # 32 layers
    # use_more_bits: first 1/8 (0..3), last 1/8 (28..31), every third in between (6, 9, ...)
    assert [i for i in range(32) if use_more_bits(i, 32)] == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
    assert s.format_for("attn_v", 0, 4096).name == "Q6_K"
    assert s.format_for("attn_v", 4, 4096).name == "Q4_K"
    assert s.format_for("ffn_down", 31, 14336).name == "Q6_K"
    assert s.format_for("ffn_gate", 0, 4096).name == "Q4_K"
    assert s.format_for("output", None, 4096).name == "Q6_K"
    assert s.format_for("norm", 0, 4096).name == "F32"
    # rows not a multiple of 256 fall back (Q4_K -> Q5_0)
    assert s.format_for("ffn_gate", 5, 4000).name == "Q5_0"


def test_q4_0_output_is_q6_k_q8_0_output_stays():
    assert scheme_for("Q4_0").format_for("output", None, 4096).name == "Q6_K"
    assert scheme_for("Q8_0").format_for("output", None, 4096).name == "Q8_0"


def test_group_int4_overhead():
    # GPTQ g128: 64 bytes of nibbles + fp16 scale + 4-bit zero per 128 weights
    s = scheme_for("GPTQ-4B-G128")
    assert s.format_for("ffn_up", 0, 4096).bytes_per_weight == pytest.approx((64 + 2 + 0.5) / 128)
    assert s.format_for("output", None, 4096).name == "F16"
    # gpt-fast int4 g32: bf16 scale + bf16 zero per 32
    assert scheme_for("INT4-G32").format_for("ffn_up", 0, 4096).bytes_per_weight == pytest.approx((16 + 4) / 32)


def test_exl2_bpw():
    s = scheme_for("EXL2-4.65")
    assert s.format_for("attn_q", 0, 4096).bits_per_weight == pytest.approx(4.65)
    assert s.format_for("output", None, 4096).bits_per_weight == pytest.approx(6.0)


@pytest.mark.parametrize("dtype, b", [("f16", 2), ("bf16", 2), ("fp8", 1), ("q8_0", 34 / 32), ("q4_0", 18 / 32)])
def test_kv_dtypes(dtype, b):
    assert kv_bytes(dtype) == pytest.approx(b)


def test_quantized_kv_shrinks_kv_bytes():
    a = tokspeed.predict("llama-3-8b", "h100-sxm", quant="F16", kv_dtype="f16", context=8192, prompt=0, gen=1)
    b = tokspeed.predict("llama-3-8b", "h100-sxm", quant="F16", kv_dtype="q8_0", context=8192, prompt=0, gen=1)
    assert b.memory.kv_bytes / a.memory.kv_bytes == pytest.approx(34 / 64)


def test_tied_embedding_gets_the_output_type():
    # llama.cpp: with no output.weight, token_embd is quantized by the output rule (Q6_K for k-quants and Q4_0)
    from tokspeed.models.catalog import get_model

    tied = get_model("gemma-3-4b")     # d_model 2560 = 10 x 256
    assert tied.tied_embeddings
    assert scheme_for("Q4_K_M", tied).format_for("token_embd", None, tied.d_model).name == "Q6_K"
    # rows of 896 (Qwen2.5 0.5B) are not a multiple of 256: the output rule falls back to Q8_0
    small = get_model("qwen2.5-0.5b")
    assert scheme_for("Q4_K_M", small).format_for("token_embd", None, small.d_model).name == "Q8_0"
    untied = get_model("llama-3-8b")
    assert scheme_for("Q4_K_M", untied).format_for("token_embd", None, untied.d_model).name == "Q4_K"
