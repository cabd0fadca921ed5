"""The operator ledger: one function for prefill and decode, checked against hand arithmetic."""

import pytest

from tokspeed.attended import _attended, expected_experts
from tokspeed.ledger import forward_ops
from tokspeed.models.spec import ModelSpec
from tokspeed.models.tensors import weight_tensors
from tokspeed.quant.schemes import scheme_for

TINY = ModelSpec(id="tiny", n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128, vocab_size=1000)
MOE = ModelSpec(id="moe", n_layers=4, d_model=64, n_heads=4, n_kv_heads=2, d_ff=0, vocab_size=1000, n_experts=8,
                n_active_experts=2, d_ff_expert=32)


def by_name(ops):
    return {o.name: o for o in ops}


def test_decode_reads_one_embedding_row_and_whole_lm_head():
    ops = by_name(forward_ops(TINY, scheme_for("F16", TINY), 2.0, 1, 1, 10))
    assert ops["token embedding gather"].weight_bytes == 64 * 2
    assert ops["LM head"].weight_bytes == 1000 * 64 * 2
    assert ops["LM head"].flops == 2 * 64 * 1000


def test_prefill_and_decode_share_the_weights():
    s = scheme_for("Q8_0", TINY)
    dec = by_name(forward_ops(TINY, s, 2.0, 1, 1, 0))
    pre = by_name(forward_ops(TINY, s, 2.0, 1, 100, 0))
    assert pre["ffn_up projection"].weight_bytes == dec["ffn_up projection"].weight_bytes
    assert pre["ffn_up projection"].flops == 100 * dec["ffn_up projection"].flops
    # 2 layers x 128 rows x (64/32 blocks x 34 bytes)
    assert dec["ffn_up projection"].weight_bytes == 2 * 128 * 2 * 34


def test_causal_attention_pairs():
    # 3 new tokens after 5 cached: 6 + 7 + 8 keys
    assert _attended(5, 3, 0) == 21
    # window 6: min(6, 6), min(6, 7), min(6, 8)
    assert _attended(5, 3, 6) == 18
    assert _attended(0, 4, 2) == 1 + 2 + 2 + 2


def test_kv_traffic_by_hand():
    ops = forward_ops(TINY, scheme_for("F16", TINY), 2.0, batch=3, n_tokens=1, depth=100)
    att = by_name(ops)["attention scores/softmax/values"]
    per_token_layer = 2 * 2 * 16 * 2          # K and V, 2 KV heads x 16 dims, 2 bytes
    assert att.kv_read_bytes == 2 * 3 * 101 * per_token_layer
    assert att.kv_write_bytes == 2 * 3 * 1 * per_token_layer


@pytest.mark.parametrize("E, k, T", [(8, 2, 1), (8, 2, 4), (64, 8, 16), (256, 8, 1), (256, 8, 64)])
def test_expert_coverage_formula(E, k, T):
    # E * (1 - (1 - k/E)^T); one token touches exactly k
    got = expected_experts(E, k, T)
    assert got == pytest.approx(E * (1 - (1 - k / E) ** T))
    assert k <= got <= min(E, k * T) + 1e-9


def test_moe_decode_reads_only_active_experts():
    s = scheme_for("F16", MOE)
    one = by_name(forward_ops(MOE, s, 2.0, 1, 1, 0))["ffn_up_exps projection"]
    # 4 layers x 2 of 8 experts x 32 x 64 x 2 bytes
    assert one.weight_bytes == pytest.approx(4 * 2 * 32 * 64 * 2)
    many = by_name(forward_ops(MOE, s, 2.0, 64, 1, 0))["ffn_up_exps projection"]
    assert many.weight_bytes == pytest.approx(4 * 8 * (1 - (6 / 8) ** 64) * 32 * 64 * 2)


def test_sliding_layers_cap_kv():
    sw = ModelSpec(id="sw", n_layers=4, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128, vocab_size=1000,
                   sliding_window=50, n_sliding_layers=2)
    assert sw.kv_cached_tokens(1000) == 2 * 1000 + 2 * 50
    ops = forward_ops(sw, scheme_for("F16", sw), 2.0, 1, 1, 1000)
    slid = by_name(ops)["attention scores/softmax/values (sliding window)"]
    assert slid.kv_read_bytes == 2 * (50 + 1) * 2 * 2 * 16 * 2


def test_mla_caches_the_latent():
    mla = ModelSpec(id="mla", n_layers=2, d_model=64, n_heads=4, n_kv_heads=4, d_ff=128, vocab_size=100,
                    kv_lora_rank=32, q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16)
    assert mla.kv_elements_per_token_layer == 32 + 8
    att = by_name(forward_ops(mla, scheme_for("F16", mla), 2.0, 1, 1, 9))["attention scores/softmax/values"]
    assert att.kv_read_bytes == 2 * 10 * 40 * 2


def test_weight_tensors_sum_to_param_count():
    for spec in (TINY, MOE):
        assert sum(r * c for _, _, r, c in weight_tensors(spec)) == spec.n_params


def test_llama_cpp_runs_mistral_v01_with_full_attention():
    """Mistral 7B v0.1's 4096-token window: vLLM-style engines cap its KV, llama.cpp caches everything
    (the GGUF conversion drops the window)."""
    import tokspeed

    kv_token = 2 * 32 * 8 * 128 * 2            # K and V, 32 layers, 8 KV heads x 128, f16
    ctx = 32768
    capped = tokspeed.predict("mistral-7b", "h100-sxm", quant="F16", engine="vllm", prompt=0, gen=1, context=ctx)
    full = tokspeed.predict("mistral-7b", "h100-sxm", quant="F16", engine="llama.cpp", prompt=0, gen=1, context=ctx)
    assert capped.memory.kv_bytes == 4096 * kv_token
    assert full.memory.kv_bytes == (ctx + 1) * kv_token
    gemma = [tokspeed.predict("gemma-2-9b", "h100-sxm", quant="F16", engine=e, prompt=0, gen=1, context=ctx)
             for e in ("vllm", "llama.cpp")]
    assert gemma[0].memory.kv_bytes == gemma[1].memory.kv_bytes       # llama.cpp honours Gemma 2's window


def test_every_operator_has_a_typed_role_and_unknown_roles_fail():
    from tokspeed.ledger import Op, Role, Scope

    ops = forward_ops(MOE, scheme_for("F16", MOE), 2.0, 1, 1, 0)
    assert all(isinstance(o.role, Role) and isinstance(o.scope, Scope) for o in ops)
    assert {o.role for o in ops} >= {Role.EMBED, Role.QKV, Role.ATTN_CORE, Role.ROUTER, Role.EXPERTS, Role.LM_HEAD}
    with pytest.raises(ValueError, match="unknown role"):
        Op("x", "qkv", Scope.DENSE, "tensor", 1)


def test_explain_groups_fail_loudly_on_a_role_without_a_row(monkeypatch):
    from tokspeed.explain import journey
    from tokspeed.ledger import Role

    monkeypatch.delitem(journey._GROUPS, Role.ROPE)
    op = [o for o in forward_ops(TINY, scheme_for("F16", TINY), 2.0, 1, 1, 0) if o.role is Role.ROPE][0]
    with pytest.raises(ValueError, match="no row"):
        journey._group(op)
