"""MoE expert coverage, MLA's compressed KV and sliding-window KV, checked by hand."""

import pytest

from scale_models import DEEPSEEK_V3, GEMMA2_9B, MIXTRAL
from tokspeed.attended import expected_experts
from tokspeed.ledger import Role, forward_ops
from tokspeed.memory import kv_bytes
from tokspeed.quant.schemes import scheme_for


def test_expected_experts_formula():
    assert expected_experts(8, 2, 1) == pytest.approx(2)                 # one token: exactly k
    assert expected_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75**2))  # 3.5
    assert expected_experts(256, 8, 1) == pytest.approx(8)
    assert expected_experts(256, 8, 32) == pytest.approx(256 * (1 - (31 / 32) ** 32))   # ≈ 163.3
    assert expected_experts(256, 8, 32) == pytest.approx(163.3, abs=0.1)
    assert expected_experts(8, 2, 10_000) == pytest.approx(8)            # large batch touches them all
    assert expected_experts(0, 0, 5) == 0


def _expert_read(spec, batch):
    st = scheme_for("F16", spec)
    ops = forward_ops(spec, st, 2, batch, 1, 0)
    return sum(o.weight_bytes for o in ops if o.role is Role.EXPERTS)


def test_mixtral_decode_reads_k_of_e_experts():
    all_experts = 32 * 8 * 3 * 4096 * 14336 * 2          # layers x experts x (gate, up, down) x F16
    assert _expert_read(MIXTRAL, 1) == pytest.approx(all_experts * 2 / 8)
    assert _expert_read(MIXTRAL, 4) == pytest.approx(all_experts * (1 - 0.75**4))   # 68 % at batch 4


def test_deepseek_shared_experts_and_dense_layers_are_always_read():
    st = scheme_for("F16", DEEPSEEK_V3)
    ops = forward_ops(DEEPSEEK_V3, st, 2, 1, 1, 0)
    dense = sum(o.weight_bytes for o in ops if o.role is Role.MLP)
    shared = sum(o.weight_bytes for o in ops if o.role is Role.SHARED_EXPERTS)
    routed = sum(o.weight_bytes for o in ops if o.role is Role.EXPERTS)
    assert dense == pytest.approx(3 * 3 * 7168 * 18432 * 2)           # 3 dense leading layers
    assert shared == pytest.approx(58 * 3 * 7168 * 2048 * 2)          # 1 shared expert in 58 MoE layers
    assert routed == pytest.approx(58 * 8 * 3 * 7168 * 2048 * 2)      # 8 of 256 routed


def test_mla_caches_the_latent_not_the_heads():
    # DeepSeek-V3: kv_lora_rank 512 + rope key 64 per token per layer, 61 layers, 2 bytes
    assert kv_bytes(DEEPSEEK_V3, 2, 1, 1) == (512 + 64) * 61 * 2 == 70_272
    # what plain MHA over 128 heads x (128 + 64) K dims and 128 V dims would cache: 71x more
    mha = 61 * 128 * (192 + 128) * 2
    assert mha / 70_272 == pytest.approx(71.1, abs=0.1)


def test_sliding_window_layers_cap_their_kv():
    per_layer_token = 2 * 8 * 256 * 2                    # K and V, 8 heads x 256, f16 = 8192 B
    assert kv_bytes(GEMMA2_9B, 2, 1, 4096) == 42 * 4096 * per_layer_token
    # at 8K, the 21 sliding layers hold only the last 4096 tokens
    assert kv_bytes(GEMMA2_9B, 2, 1, 8192) == (21 * 8192 + 21 * 4096) * per_layer_token == 2_113_929_216
