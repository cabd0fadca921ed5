"""Architectures beyond plain attention, checked against sums done by hand: hybrid models whose
linear-attention / state-space layers keep a fixed-size state (Qwen3-Next, Granite 4.0-H), Llama 4's
chunked attention and interleaved MoE, and refusal of what is not modelled."""

import json
from pathlib import Path

import pytest

from tokspeed import predict
from tokspeed.errors import UserError
from tokspeed.attended import _attended_chunked
from tokspeed.ledger import STATE_BYTES, Role, forward_ops
from tokspeed.models import ModelSpec
from tokspeed.models.catalog import get_model
from tokspeed.models.hf_config import spec_from_hf_config
from tokspeed.quant.schemes import scheme_for

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model-configs" / "configs"

# Qwen3-Next-80B-A3B by hand (record: 48 layers, every 4th full attention; Gated DeltaNet with 16 key heads
# x 128, 32 value heads x 128, conv kernel 4; attention GQA 16/2 with head_dim 256)
CONV = (4 - 1) * (2 * 16 * 128 + 32 * 128)        # conv tail: 3 x 8,192 channels = 24,576 values
RECURRENT = 32 * 128 * 128                         # one 128 x 128 matrix per value head = 524,288
STATE_PER_SEQ = 36 * (CONV + RECURRENT) * 4        # 36 linear layers, F32: 79,036,416 bytes
KV_PER_TOKEN = 12 * 2 * 2 * 256 * 2                # 12 attention layers x K,V x 2 heads x 256 x f16 = 24,576 B


def test_qwen3_next_state_and_kv_by_hand():
    m = get_model("qwen3-next-80b-a3b")
    assert (m.n_linear_layers, m.n_attn_layers) == (36, 12)
    assert m.state_elements_per_layer == CONV + RECURRENT == 548_864
    assert STATE_PER_SEQ == 79_036_416
    assert m.kv_elements_per_token_layer * m.n_attn_layers * 2 == KV_PER_TOKEN == 24_576
    # memory: KV for every token (context + prompt + gen) plus one state per sequence, not per token
    p = predict(m, "h100-sxm", quant="Q4_K_M", context=8192, prompt=512, gen=128)
    assert p.memory.kv_bytes == (8192 + 512 + 128) * KV_PER_TOKEN + STATE_PER_SEQ
    p2 = predict(m, "h100-sxm", quant="Q4_K_M", context=16384, prompt=512, gen=128, batch=2)
    assert p2.memory.kv_bytes == 2 * ((16384 + 512 + 128) * KV_PER_TOKEN + STATE_PER_SEQ)


def test_qwen3_next_layer_params_by_hand():
    m = get_model("qwen3-next-80b-a3b")
    # in_proj_qkvz (2x2048 + 2x4096) and in_proj_ba (2x32) from 2048; conv 8192 x 4; dt_bias, A_log (32 each),
    # gated RMSNorm (128); out_proj 4096 -> 2048
    assert m.linear_params_per_layer() == 2048 * (12288 + 64) + 8192 * 4 + 2 * 32 + 128 + 4096 * 2048 == 33_718_464
    # gated attention: q_proj emits queries and gates (2 x 16 x 256), k/v 2 x 256, o 4096 -> 2048, q/k norms 256
    assert m.attention_params_per_layer() == 2048 * 8192 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 256
    assert m.rotary_dim == 64


def test_qwen3_next_decode_ledger_reads_the_state_not_a_cache():
    m = get_model("qwen3-next-80b-a3b")
    st = scheme_for("Q4_K_M", m)
    ops = {o.role: o for o in forward_ops(m, st, 2.0, batch=1, n_tokens=1, depth=10_000)}
    scan = ops[Role.STATE_SCAN]
    assert scan.count == 36 and scan.act_bytes == 2 * STATE_PER_SEQ and scan.kv_read_bytes == 0
    assert STATE_BYTES == 4.0
    core = [o for o in forward_ops(m, st, 2.0, 1, 1, 10_000) if o.role is Role.ATTN_CORE]
    assert sum(o.kv_read_bytes for o in core) == (10_000 + 1) * KV_PER_TOKEN
    assert ops[Role.QKV].count == 12 and ops[Role.LINEAR_PROJ].count == 36
    # the state read does not grow with the context
    far = {o.role: o for o in forward_ops(m, st, 2.0, 1, 1, 200_000)}
    assert far[Role.STATE_SCAN].act_bytes == scan.act_bytes


def test_mamba2_hybrid_config_by_hand():
    """Granite 4.0-H-style config (transformers GraniteMoeHybridConfig fields), shape made up for the test."""
    cfg = {"model_type": "granitemoehybrid", "num_hidden_layers": 8, "hidden_size": 256, "num_attention_heads": 4,
           "num_key_value_heads": 1, "vocab_size": 1000, "intermediate_size": 512, "shared_intermediate_size": 512,
           "num_local_experts": 0, "layer_types": ["mamba"] * 3 + ["attention"] + ["mamba"] * 3 + ["attention"],
           "mamba_n_heads": 8, "mamba_d_head": 64, "mamba_d_state": 32, "mamba_n_groups": 1, "mamba_d_conv": 4}
    m = spec_from_hf_config(cfg, id="tiny-granite-h")
    assert (m.n_linear_layers, m.linear_kind) == (6, "mamba2")
    d_inner, conv_dim = 8 * 64, 8 * 64 + 2 * 32
    # in_proj d -> z, x (2 x 512), B, C (2 x 32) and dt (8); conv with bias; dt_bias, A_log, D (8 each);
    # gated norm 512; out_proj 512 -> 256
    assert m.linear_params_per_layer() == 256 * (2 * 512 + 2 * 32 + 8) + conv_dim * 4 + conv_dim + 3 * 8 + 512 + 512 * 256
    assert m.state_elements_per_layer == 3 * conv_dim + 8 * 64 * 32
    assert m.n_params == (1000 * 256 + 6 * m.linear_params_per_layer() + 2 * m.attention_params_per_layer()
                          + 8 * 3 * 256 * 512 + (2 * 8 + 1) * 256)
    assert d_inner == 512


def test_llama4_chunked_attention_by_hand():
    # positions 8190, 8191 | 8192, 8193 with 8192-token chunks attend 8191 + 8192 + 1 + 2 keys
    assert _attended_chunked(8190, 4, 8192) == 8191 + 8192 + 1 + 2
    assert _attended_chunked(0, 8192, 8192) == 8192 * 8193 / 2
    m = get_model("llama-4-scout-17b-16e")
    kv_tok = 2 * 8 * 128 * 2                       # K and V, 8 heads x 128, f16: 4,096 B per token per layer
    # memory: 12 global layers hold every token, 36 chunked layers at most one chunk
    p = predict(m, "h100-sxm", quant="Q4_K_M", context=20_000, prompt=0, gen=1)
    assert p.memory.kv_bytes == (12 * 20_001 + 36 * 8192) * kv_tok
    # decode right after a chunk boundary reads only the global layers' cache (and the new token)
    core = [o for o in forward_ops(m, scheme_for("Q4_K_M", m), 2.0, 1, 1, 16_384) if o.role is Role.ATTN_CORE]
    assert sum(o.kv_read_bytes for o in core) == (12 * 16_385 + 36 * 1) * kv_tok


def test_llama4_config_reads_as_the_catalog_entry():
    cfg = json.loads((CONFIGS / "llama-4-scout-17b-16e.json").read_text())
    m, g = spec_from_hf_config(cfg, id="scout"), get_model("llama-4-scout-17b-16e")
    assert (m.n_params, m.n_active_params, m.vision_params) == (g.n_params, g.n_active_params, g.vision_params)
    assert (m.n_sliding_layers, m.sliding_window, m.chunked_attention) == (36, 8192, True)
    # Maverick: MoE on every other layer, dense 16384 elsewhere
    mav = dict(cfg["text_config"], interleave_moe_layer_step=2, num_local_experts=128, moe_layers=None)
    mm = spec_from_hf_config(mav, id="maverick-text")
    assert (mm.n_dense_layers, mm.d_ff) == (24, 16384)
    assert mm.n_params == get_model("llama-4-maverick-17b-128e").n_params


def test_llama4_vision_tower_by_hand():
    w, ff = 1408, 5632
    layer = 4 * (w * w + w) + (w * ff + ff) + (ff * w + w) + 2 * 2 * w
    embed = 3 * 14 * 14 * w + w + (24 * 24 + 1) * w + 2 * 2 * w
    assert get_model("llama-4-scout-17b-16e").vision_params == embed + 34 * layer + ff * 4096 + 4096 * 4096 + 4096 * 5120


@pytest.mark.parametrize("cfg, field", [
    ({"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*-"}, "hybrid_override_pattern"),
    ({"model_type": "jamba", "attn_layer_period": 8, "mamba_d_state": 16}, "attn_layer_period"),
    ({"model_type": "deepseek_v4", "index_topk": 2048, "kv_lora_rank": 512}, "index_topk"),
    ({"model_type": "deepseek_v32", "index_topk": 2048, "kv_lora_rank": 512}, "lacks index_n_heads, index_head_dim"),
    ({"model_type": "some_new", "layer_types": ["full_attention", "mamba"]}, "layer_types"),
])
def test_unmodelled_architectures_are_refused_naming_the_field(cfg, field):
    base = {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
            "vocab_size": 100}
    with pytest.raises(UserError, match=field):
        spec_from_hf_config({**base, **cfg}, id="x")


def test_hybrid_fields_validated():
    with pytest.raises(UserError, match="linear_kind"):
        ModelSpec(id="x", n_layers=4, d_model=64, n_heads=4, n_kv_heads=4, d_ff=128, vocab_size=10, n_linear_layers=2)


def test_llama4_decode_average_across_a_chunk_boundary():
    """predict's closed-form decode average (kinks at every chunk boundary) equals the step-by-step sum."""
    from tokspeed.timing import pass_time

    m = get_model("llama-4-scout-17b-16e")
    p = predict(m, "h100-sxm", quant="Q4_K_M", context=8000, prompt=0, gen=400)    # crosses depth 8192
    total = sum(pass_time(forward_ops(p.spec, p.storage, 2.0, 1, 1, d), p.hw, p.engine_profile, "Q4_K_M", 1).seconds
                for d in range(8000, 8400))
    assert p.decode.tok_s == pytest.approx(400 / total, rel=1e-9)
