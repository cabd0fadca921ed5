"""Full-attention layers with their own head shape (Gemma 4: global_head_dim, global_kv_heads, K = V), checked
against arithmetic done by hand from the Gemma 4 31B config (data/model-configs/configs/gemma-4-31b.json):
60 layers, d_model 5376, 32 heads; 50 sliding layers (window 1024) with 16 KV heads x 256; 10 full layers
(every 6th) with 4 KV heads x 512 and keys reused as values."""

import pytest

from tokspeed.errors import UserError
from tokspeed.ledger import forward_ops
from tokspeed.memory import _max_context, kv_bytes
from tokspeed.models.catalog import get_model
from tokspeed.models.spec import ModelSpec
from tokspeed.models.tensors import weight_tensors
from tokspeed.quant.schemes import scheme_for

G31 = get_model("gemma-4-31b")
F16 = 2.0
SLIDING_TOKEN_LAYER = 2 * 16 * 256 * 2      # K and V, 16 heads x 256, 2 bytes: 16,384 bytes
FULL_TOKEN_LAYER = 1 * 4 * 512 * 2          # K only (= V), 4 heads x 512, 2 bytes: 4,096 bytes


def test_kv_bytes_per_sequence_at_1k_and_128k_by_hand():
    # 1K: every layer holds 1,024 tokens
    at_1k = 50 * 1024 * 16_384 + 10 * 1024 * 4_096
    assert at_1k == 880_803_840
    assert kv_bytes(G31, F16, 1, 1024) == at_1k
    # 128K: the sliding layers stay at the window, the full layers hold 131,072 tokens
    at_128k = 50 * 1024 * 16_384 + 10 * 131_072 * 4_096
    assert at_128k == 6_207_569_920          # 5.78 GiB; uniform 60 x 256-dim K+V layers would be 128.8 GB
    assert kv_bytes(G31, F16, 1, 131_072) == at_128k
    assert kv_bytes(G31, F16, 3, 131_072) == 3 * at_128k


def test_attention_parameters_by_hand():
    d = 5376
    sliding = d * 32 * 256 + 2 * d * 16 * 256 + 32 * 256 * d + 2 * 256      # q, k, v, o, q/k norms
    full = d * 32 * 512 + d * 4 * 512 + 32 * 512 * d + 2 * 512              # q, k (= v), o, q/k norms
    assert G31.attention_params_per_layer() == sliding == 132_121_088
    assert G31.attention_params_per_layer(full=True) == full == 187_171_840
    assert G31.param_counts()["attention"] == 50 * sliding + 10 * full


def test_full_layers_are_every_sixth_and_have_no_v_projection():
    layers = {}
    for role, layer, rows, cols in weight_tensors(G31):
        if layer in (4, 5) and role.startswith("attn_"):
            layers.setdefault(layer, {})[role] = (rows, cols)
    assert layers[4] == {"attn_q": (8192, 5376), "attn_k": (4096, 5376), "attn_v": (4096, 5376),
                         "attn_output": (5376, 8192)}
    assert layers[5] == {"attn_q": (16384, 5376), "attn_k": (2048, 5376), "attn_output": (5376, 16384)}
    assert [i for i in range(60) if G31.is_full_layer(i)] == list(range(5, 60, 6))


def test_decode_core_reads_each_layer_kind_at_its_own_width():
    depth = 131_072
    ops = [o for o in forward_ops(G31, scheme_for("F16", G31), F16, 1, 1, depth) if o.role.value == "attn_core"]
    full, sliding = ops
    assert (full.count, sliding.count) == (10, 50)
    # one new token: the full layers read depth + 1 cached keys (K = V: no separate values), the sliding
    # layers the window (1,024) + the new one
    assert full.kv_read_bytes == 10 * (depth + 1) * FULL_TOKEN_LAYER
    assert sliding.kv_read_bytes == 50 * (1024 + 1) * SLIDING_TOKEN_LAYER
    assert (full.query_heads_per_kv, sliding.query_heads_per_kv) == (32 / 4, 32 / 16)
    # 32 heads x keys x (2 x 512 score + 2 x 512 value + 5 softmax) FLOPs per layer
    assert full.flops == 10 * 32 * (depth + 1) * (2 * 512 + 2 * 512 + 5)


def test_projection_flops_follow_the_layer_shapes():
    ops = {o.name: o for o in forward_ops(G31, scheme_for("F16", G31), F16, 1, 1, 0)}
    assert ops["attn_k projection"].flops == 50 * 2 * 5376 * 4096
    assert ops["attn_k projection (full attention)"].flops == 10 * 2 * 5376 * 2048
    assert "attn_v projection (full attention)" not in ops
    assert ops["attn_output projection (full attention)"].weight_bytes == 10 * 5376 * 16384 * 2


def test_largest_context_by_hand():
    """Past the window the cache grows by 10 x 4,096 bytes per token: a KV budget of the 1K cache plus
    40,960 x 99,000 bytes holds exactly 100,024 tokens."""
    free = 880_803_840 + 40_960 * 99_000
    assert _max_context(G31, F16, 1, free, 262_144) == 1024 + 99_000
    assert _max_context(G31, F16, 1, free - 1, 262_144) == 1024 + 99_000 - 1


def test_gemma4_moe_counts_by_hand():
    """26B-A4B: every layer runs top-8 of 128 experts (704) beside a dense GeGLU MLP (2112, a shared expert)."""
    m = get_model("gemma-4-26b-a4b")
    d = 2816
    expert = 3 * d * 704
    assert m.param_counts()["moe_experts"] == 30 * 128 * expert
    assert m.param_counts()["moe_shared"] == 30 * 3 * d * 2112
    assert m.n_params - m.n_active_params == 30 * 120 * expert
    assert kv_bytes(m, F16, 1, 131_072) == 25 * 1024 * 2 * 8 * 256 * 2 + 5 * 131_072 * 2 * 512 * 2


def test_spec_refuses_global_shapes_it_cannot_express():
    base = dict(id="x", n_layers=6, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128, vocab_size=100,
                sliding_window=16, n_sliding_layers=5)
    with pytest.raises(UserError, match="global_kv_heads 3"):
        ModelSpec(**base, global_kv_heads=3)
    with pytest.raises(UserError, match="not MLA"):
        ModelSpec(**base, global_head_dim=32, kv_lora_rank=8, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=8)
    with pytest.raises(UserError, match="global_kv_shared"):
        ModelSpec(**base, global_kv_shared="yes")


def test_gemma4_per_layer_embeddings_are_refused_naming_the_field():
    """Gemma 4 E2B/E4B add per-layer input embeddings and share KV between layers: not modelled, so refused."""
    import json
    from pathlib import Path

    from tokspeed.models.hf_config import spec_from_hf_config

    path = Path(__file__).resolve().parents[1] / "data" / "model-configs" / "configs" / "gemma-4-31b.json"
    cfg = json.loads(path.read_text())
    cfg["text_config"]["hidden_size_per_layer_input"] = 256
    with pytest.raises(UserError, match="hidden_size_per_layer_input.* not modelled"):
        spec_from_hf_config(cfg)


def test_an_engine_without_windows_keeps_the_layer_shapes():
    """gpt-fast attends sliding layers over the whole context: Gemma 4's sliding layers then cache every token
    at their own shape (16 KV heads x 256, K and V), the full layers keep theirs, and the weights do not change."""
    from tokspeed.engines.compat import sliding_window_spec

    full = sliding_window_spec("gpt-fast", G31)
    assert full.n_params == G31.n_params
    assert kv_bytes(full, F16, 1, 131_072) == 50 * 131_072 * 16_384 + 10 * 131_072 * 4_096


@pytest.mark.parametrize("scale", [{}, {"gpus": 2, "parallel": "pp"}, {"gpus": 2, "parallel": "tp"}])
def test_predicted_memory_holds_the_hand_kv(scale):
    """The KV cache a prediction holds, on one device or split over two (scale layouts), is the hand count at
    the run's total context: 131,072 cached + 1 prompt + 1 generated = 131,074 tokens."""
    from tokspeed import predict

    mem = predict("gemma-4-31b", "h100-sxm", context=131_072, prompt=1, gen=1, **scale).to_dict()["memory"]
    assert mem["kv_bytes"] == 50 * 1024 * 16_384 + 10 * 131_074 * 4_096
