"""Server engines launch fewer kernels than the ledger lists (engines/graph_kernels.py): q/k/v as one GEMM, gate and up
as one, the residual add inside the next RMSNorm, the attention core as the cache write and one kernel. Counts by hand
from the model's shape; llama.cpp keeps the ledger's unfused count."""

import pytest

from tokspeed.engines.graph_kernels import kernel_shares
from tokspeed.ledger import forward_ops
from tokspeed.models.catalog import get_model
from tokspeed.serving_api import make_setup


def _kernels(model, engine, quant, tp=1):
    s = make_setup(model, "h200-sxm", engine, quant=quant, kv_dtype="f16", isl=1024, osl=1024, length_ratio=1.0,
                   fitted=None, engine_version=None)
    r = s.group(tp, 1)
    pt = r.timer(forward_ops(r.spec, r.storage, r.kv_elem_bytes, 4, 1, 1024), r.profile, 4, 1)
    return pt.overhead_s / r.profile.launch_s


def test_llama_decode_pass_under_vllm_is_ten_kernels_a_layer():
    # per layer: attention norm 1, qkv 1, RoPE 1, attention 2 (cache write + kernel), o_proj 1, FFN norm 1 (residual
    # inside), gate_up 1 + down 1, SiLU-and-mul 1 = 10; x 32 layers + embedding, final norm, LM head, sampling = 324
    assert _kernels("llama-3.1-8b", "vllm", "F16") == pytest.approx(324)


def test_gpt_oss_decode_pass_under_vllm_counts_the_fused_moe_dispatch():
    # per layer: norm 1, qkv 1, RoPE 1, attention 2, o_proj 1, FFN norm 1, router 1, w13 + w2 grouped GEMMs 2,
    # activation 1, fused_moe's dispatch 4 (capabilities.toml per_moe_layer) = 15; x 36 + 4 = 544
    assert _kernels("gpt-oss-120b", "vllm", "MXFP4") == pytest.approx(544)


def test_llama_cpp_keeps_the_unfused_ledger_count():
    s = make_setup("llama-3.1-8b", "h200-sxm", "llama.cpp-cuda", quant="Q4_K_M", kv_dtype="f16", isl=1024, osl=1024,
                   length_ratio=1.0, fitted=None, engine_version=None)
    assert s.group(1, 1).profile.kernel_shares == ()


SERVER = {"fused": ["qkv", "gate_up", "residual_norm"], "attention": 2}


def test_shares_by_shape():
    llama = dict(kernel_shares(SERVER, get_model("llama-3.1-8b")))
    assert llama["qkv"] == pytest.approx(1 / 3)             # q, k, v -> one GEMM
    assert llama["mlp"] == pytest.approx(2 / 3)             # gate, up, down -> gate_up, down
    assert llama["attn_residual"] == llama["ffn_residual"] == 0
    assert llama["attn_core"] == pytest.approx(2 / 3)       # scores, softmax, values -> cache write + one kernel
    mla = dict(kernel_shares(SERVER, get_model("deepseek-r1")))
    assert mla["qkv"] == pytest.approx(3 / 4)               # q_a + kv_a -> one GEMM; q_b and kv_b stay
    plain = dict(kernel_shares(SERVER, get_model("phi-2")))  # up, down: nothing to fuse
    assert "mlp" not in plain and plain["qkv"] == pytest.approx(1 / 3)
    assert kernel_shares({"per_moe_layer": 2}, get_model("llama-3.1-8b")) == ()


def test_an_unknown_fusion_is_refused():
    with pytest.raises(ValueError, match="unknown fusion"):
        kernel_shares({"fused": ["qkv", "rope_into_attention"]}, None)
