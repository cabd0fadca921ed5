"""ModelSpec from GGUF metadata + tensors beyond plain Llama: Qwen2 biases, DeepSeek-V2 MLA + MoE.

For each file: the spec counts exactly the parameters the file holds, and ``predict`` on the file
holds exactly the file's bytes in memory (every tensor found by the ledger's roles).
"""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from files_fixtures import finish  # noqa: E402

from tokspeed.files.loader import open_model_file  # noqa: E402
from tokspeed.predict import predict  # noqa: E402


def _write(path, arch, kv: dict, tensors: dict):
    w = gguf.GGUFWriter(str(path), arch)
    for key, val in kv.items():
        if isinstance(val, float):
            w.add_float32(f"{arch}.{key}", val)
        else:
            w.add_uint32(f"{arch}.{key}", val)
    for name, shape in tensors.items():
        w.add_tensor(name, np.zeros(shape, np.float32 if len(shape) == 1 else np.float16))
    finish(w)
    return path


def _check_file(path):
    mf = open_model_file(path)
    assert sum(e.elements for e in mf.storage.entries) == mf.spec.n_params
    p = predict(str(path), "h100-sxm").to_dict()
    # llama.cpp keeps token_embd in host RAM; a file without output.weight ties its output to it: a copy on the GPU
    names = {e.tensor.name: e.tensor.n_bytes for e in mf.storage.entries}
    embd = names["token_embd.weight"]
    assert p["memory"]["host_bytes"] == embd
    on_gpu = mf.storage.resident_bytes - (embd if "output.weight" in names else 0)
    assert p["memory"]["weights_bytes"] == on_gpu
    return mf.spec


def test_qwen2_biases(tmp_path):
    d, h, kvh, hd, f, v, L = 128, 4, 2, 32, 256, 300, 2
    t = {"token_embd.weight": (v, d), "output_norm.weight": (d,), "output.weight": (v, d)}
    for i in range(L):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": (d,), p + "ffn_norm.weight": (d,),
                  p + "attn_q.weight": (h * hd, d), p + "attn_q.bias": (h * hd,),
                  p + "attn_k.weight": (kvh * hd, d), p + "attn_k.bias": (kvh * hd,),
                  p + "attn_v.weight": (kvh * hd, d), p + "attn_v.bias": (kvh * hd,),
                  p + "attn_output.weight": (d, h * hd),
                  p + "ffn_gate.weight": (f, d), p + "ffn_up.weight": (f, d), p + "ffn_down.weight": (d, f)})
    kv = {"block_count": L, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
          "attention.head_count_kv": kvh, "context_length": 32768, "rope.freq_base": 1e6}
    spec = _check_file(_write(tmp_path / "qwen2.gguf", "qwen2", kv, t))
    assert spec.family == "qwen2" and spec.qkv_bias and not spec.o_bias and not spec.tied_embeddings
    assert spec.rope_theta == 1e6 and spec.max_context == 32768


def test_deepseek2_mla_moe(tmp_path):
    d, h, v = 128, 4, 300
    q_lora, kv_lora, rope, nope, vh = 64, 32, 16, 32, 32
    f, E, k, fe = 256, 4, 2, 64
    t = {"token_embd.weight": (v, d), "output_norm.weight": (d,), "output.weight": (v, d)}
    for i in range(2):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": (d,), p + "ffn_norm.weight": (d,),
                  p + "attn_q_a.weight": (q_lora, d), p + "attn_q_a_norm.weight": (q_lora,),
                  p + "attn_q_b.weight": (h * (nope + rope), q_lora),
                  p + "attn_kv_a_mqa.weight": (kv_lora + rope, d), p + "attn_kv_a_norm.weight": (kv_lora,),
                  p + "attn_kv_b.weight": (h * (nope + vh), kv_lora),
                  p + "attn_output.weight": (d, h * vh)})
    t.update({"blk.0.ffn_gate.weight": (f, d), "blk.0.ffn_up.weight": (f, d), "blk.0.ffn_down.weight": (d, f)})
    t.update({"blk.1.ffn_gate_inp.weight": (E, d),
              "blk.1.ffn_gate_exps.weight": (E, fe, d), "blk.1.ffn_up_exps.weight": (E, fe, d),
              "blk.1.ffn_down_exps.weight": (E, d, fe),
              "blk.1.ffn_gate_shexp.weight": (fe, d), "blk.1.ffn_up_shexp.weight": (fe, d),
              "blk.1.ffn_down_shexp.weight": (d, fe)})
    kv = {"block_count": 2, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
          "attention.head_count_kv": h, "attention.q_lora_rank": q_lora, "attention.kv_lora_rank": kv_lora,
          "attention.key_length": nope + rope, "attention.value_length": vh, "rope.dimension_count": rope,
          "expert_count": E, "expert_used_count": k, "expert_shared_count": 1, "expert_feed_forward_length": fe,
          "leading_dense_block_count": 1}
    spec = _check_file(_write(tmp_path / "dsv2.gguf", "deepseek2", kv, t))
    assert spec.is_mla and (spec.kv_lora_rank, spec.q_lora_rank, spec.qk_rope_head_dim, spec.qk_nope_head_dim,
                            spec.v_head_dim) == (kv_lora, q_lora, rope, nope, vh)
    assert (spec.n_experts, spec.n_active_experts, spec.n_shared_experts, spec.d_ff_expert, spec.d_ff_shared,
            spec.n_dense_layers, spec.d_ff) == (E, k, 1, fe, fe, 1, f)
    # MLA caches the latent + the rope key: (32 + 16) x 2 layers x 2 bytes per context token
    assert spec.kv_elements_per_token_layer == kv_lora + rope


def _gemma4_tensors(L, d, h, v, f, sliding_shape, full_shape, full_layers):
    t = {"token_embd.weight": (v, d), "output_norm.weight": (d,)}
    for i in range(L):
        p = f"blk.{i}."
        hd, kvh, has_v = full_shape if i in full_layers else sliding_shape
        t.update({p + "attn_norm.weight": (d,), p + "post_attention_norm.weight": (d,), p + "ffn_norm.weight": (d,),
                  p + "post_ffw_norm.weight": (d,), p + "attn_q_norm.weight": (hd,), p + "attn_k_norm.weight": (hd,),
                  p + "attn_q.weight": (h * hd, d), p + "attn_k.weight": (kvh * hd, d),
                  p + "attn_output.weight": (d, h * hd),
                  p + "ffn_gate.weight": (f, d), p + "ffn_up.weight": (f, d), p + "ffn_down.weight": (d, f)})
        if has_v:
            t[p + "attn_v.weight"] = (kvh * hd, d)
    return t


def test_gemma4_full_layers_of_their_own_shape(tmp_path):
    """Gemma 4's full-attention layers (every 6th) have wider heads, fewer KV heads and no v projection (K = V):
    read from the tensors, the spec counts exactly the file's parameters and caches the right KV."""
    d, h, v, f, L = 64, 4, 300, 128, 12
    t = _gemma4_tensors(L, d, h, v, f, (16, 2, True), (32, 1, False), {5, 11})
    kv = {"block_count": L, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
          "attention.head_count_kv": 2, "attention.sliding_window": 8, "context_length": 4096}
    spec = _check_file(_write(tmp_path / "gemma4.gguf", "gemma4", kv, t))
    assert (spec.head_dim, spec.n_kv_heads, spec.n_sliding_layers, spec.sliding_window) == (16, 2, 10, 8)
    assert (spec.global_head_dim, spec.global_kv_heads, spec.global_kv_shared) == (32, 1, True)
    # at 100 tokens: 10 sliding layers x 8 x (2 x 2 x 16) + 2 full layers x 100 x (1 x 32) values
    assert spec.kv_cached_elements(100) == 10 * 8 * 64 + 2 * 100 * 32


def test_full_layers_not_evenly_spread_are_refused(tmp_path):
    from tokspeed.errors import UserError

    d, h, v, f, L = 64, 4, 300, 128, 12
    t = _gemma4_tensors(L, d, h, v, f, (16, 2, True), (32, 1, False), {3, 11})
    kv = {"block_count": L, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
          "attention.head_count_kv": 2, "attention.sliding_window": 8}
    with pytest.raises(UserError, match="not evenly spread"):
        open_model_file(_write(tmp_path / "odd.gguf", "gemma4", kv, t))
