"""Sparse-indexed attention (DeepSeek Sparse Attention: index_topk, index_n_heads, index_head_dim), checked against
arithmetic done by hand from DeepSeek-V3.2's config (data/model-configs/configs/deepseek-v3.2.json): DeepSeek-V3's
shape (61 MLA layers, q_lora 1536, latent 512 + rope key 64) plus an indexer of 64 heads x 128 choosing the top
2,048 cached keys per query."""

import json
from pathlib import Path

import pytest

from tokspeed.errors import UserError
from tokspeed.attended import depth_kinks
from tokspeed.ledger import forward_ops
from tokspeed.memory import _max_context, kv_bytes
from tokspeed.models.catalog import get_model
from tokspeed.models.hf_config import spec_from_hf_config
from tokspeed.models.spec import ModelSpec
from tokspeed.quant.schemes import scheme_for

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model-configs" / "configs"
V32 = spec_from_hf_config(json.loads((CONFIGS / "deepseek-v3.2.json").read_text()), id="deepseek-v3.2")
F16 = 2.0
LATENT_ROW = (512 + 64) * 2          # one cached MLA latent + rope key at f16: 1,152 bytes
INDEX_KEY = 128 + 4                  # one FP8 indexer key of 128 + its FP32 scale


def test_indexer_parameters_by_hand():
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64      # wq_b, wk, k_norm (w + b), weights_proj
    assert per_layer == 13_959_424
    assert V32.indexer_params_per_layer() == per_layer
    # the rest is DeepSeek-V3's shape, whose count the catalog test checks against its report
    assert V32.n_params == get_model("deepseek-v3").n_params + 61 * per_layer
    assert abs(V32.n_params / 1e9 - 671) / 671 < 0.005


def test_decode_reads_topk_latents_and_every_indexer_key():
    depth = 100_000
    ops = [o for o in forward_ops(V32, scheme_for("F16", V32), F16, 1, 1, depth) if o.role.value == "attn_core"]
    core, indexer = ops
    assert core.kv_read_bytes == 61 * 2048 * LATENT_ROW                   # min(depth + 1, 2,048) latents
    assert core.flops == 61 * 128 * 2048 * (2 * 576 + 2 * 512 + 5)
    assert indexer.kv_read_bytes == 61 * (depth + 1) * INDEX_KEY          # the indexer scores every key
    assert indexer.kv_write_bytes == 61 * INDEX_KEY
    assert indexer.flops == 61 * (depth + 1) * (2 * 64 * 128 + 3 * 64)
    # below top-k the core reads the whole (short) cache
    short = [o for o in forward_ops(V32, scheme_for("F16", V32), F16, 1, 1, 1000) if o.role.value == "attn_core"][0]
    assert short.kv_read_bytes == 61 * 1001 * LATENT_ROW
    assert depth_kinks(V32) == (2048,)


def test_indexer_weights_are_read_at_decode():
    ops = {o.name: o for o in forward_ops(V32, scheme_for("F16", V32), F16, 1, 1, 0)}
    assert ops["indexer_q projection"].weight_bytes == 61 * 64 * 128 * 1536 * 2
    assert ops["indexer_k projection"].flops == 61 * 2 * 128 * 7168
    assert ops["indexer_proj projection"].flops == 61 * 2 * 64 * 7168


def test_memory_holds_the_latents_and_the_indexer_keys():
    t = 131_072
    assert kv_bytes(V32, F16, 1, t) == 61 * t * LATENT_ROW + 61 * t * INDEX_KEY
    assert kv_bytes(V32, F16, 2, t) == 2 * 61 * t * (LATENT_ROW + INDEX_KEY)
    per_token = 61 * (LATENT_ROW + INDEX_KEY)
    assert _max_context(V32, F16, 1, per_token * 50_000, 163_840) == 50_000
    assert _max_context(V32, F16, 1, per_token * 50_000 - 1, 163_840) == 49_999


def test_glm5_reads_and_glm52_shared_indexers_are_refused():
    glm5 = spec_from_hf_config(json.loads((CONFIGS / "glm-5.json").read_text()))
    assert (glm5.index_topk, glm5.index_n_heads, glm5.index_head_dim) == (2048, 32, 128)
    assert glm5.indexer_params_per_layer() == 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32
    with pytest.raises(UserError, match="indexer_types shared.* not modelled"):
        spec_from_hf_config(json.loads((CONFIGS / "glm-5.2.json").read_text()))


def test_spec_refuses_an_incomplete_indexer():
    base = dict(id="x", n_layers=2, d_model=64, n_heads=4, n_kv_heads=4, d_ff=128, vocab_size=100)
    with pytest.raises(UserError, match="sparse-indexed attention needs"):
        ModelSpec(**base, index_topk=16)
    with pytest.raises(UserError, match="on MLA"):
        ModelSpec(**base, index_topk=16, index_n_heads=2, index_head_dim=8)
