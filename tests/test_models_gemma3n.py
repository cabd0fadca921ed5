"""Gemma 3n: per-layer inputs, AltUp, LAuReL and layers that attend another layer's cache (transformers
modeling_gemma3n, llama.cpp src/models/gemma3n.cpp). Every figure below is worked out by hand from the shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tokspeed.errors import UserError
from tokspeed.ledger import Role, forward_ops
from tokspeed.models.catalog import get_model
from tokspeed.models.hf_config import spec_from_hf_config
from tokspeed.quant.schemes import scheme_for

# A small Gemma 3n: 10 layers of 64 (4 heads / 2 KV heads of 16), GeGLU 128, vocabulary 100; per-layer inputs 8 wide
# from a 50-row table, 4 AltUp copies, LAuReL rank 4, the last 3 layers sharing caches, 2 sparse FFN gates
TINY = {"model_type": "gemma3n", "text_config": {
    "model_type": "gemma3n_text", "num_hidden_layers": 10, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": [128] * 10, "vocab_size": 100,
    "vocab_size_per_layer_input": 50, "hidden_size_per_layer_input": 8, "altup_num_inputs": 4, "laurel_rank": 4,
    "num_kv_shared_layers": 3, "activation_sparsity_pattern": [0.95, 0.95] + [0.0] * 8, "sliding_window": 16,
    "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 2, "max_position_embeddings": 4096}}


def test_a_config_reads_every_part_by_hand():
    s = spec_from_hf_config(TINY, id="tiny-3n")
    assert (s.ple_dim, s.ple_vocab, s.altup_inputs, s.laurel_rank, s.kv_shared_layers, s.sparse_ffn_layers) == \
        (8, 50, 4, 4, 3, 2)
    assert (s.d_ff, s.n_sliding_layers, s.qk_norm, s.norms_per_layer, s.tied_embeddings) == (128, 8, True, 4, True)
    c = s.param_counts()
    assert c["embedding"] == 100 * 64
    assert c["attention"] == 10 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16)          # 123,200
    assert c["ffn_dense"] == 10 * 3 * 64 * 128                                          # 245,760
    assert c["norms"] == (10 * 4 + 1) * 64
    # table 50 x 80, projection 64 x 80, its norm 8; per layer gate 64 x 8, projection 8 x 64, norm 64
    assert c["per_layer_inputs"] == 4000 + 5120 + 8 + 10 * 1088                        # 20,008
    # 3 + 3 copies' projections 64 x 64; per layer router 64 x 4, router norm 64, correction scale 64,
    # prediction 4 x 16, correction 4 x 4
    assert c["altup"] == 24576 + 10 * (256 + 64 + 64 + 64 + 16)                         # 29,216
    assert c["laurel"] == 10 * (2 * 64 * 4 + 64)                                         # 5,760
    assert s.n_params == 432_968


def test_the_shared_layers_hold_no_cache():
    """Layers 7, 8 (sliding) and 9 (full) attend earlier caches: of 2 full and 8 sliding layers, 1 full and 6 sliding
    hold one of their own."""
    s = spec_from_hf_config(TINY)
    assert s.kv_sharing_counts() == (1, 2) and (s.n_full_cached, s.n_sliding_cached) == (1, 6)
    assert s.kv_cached_tokens(100) == 1 * 100 + 6 * 16


def test_e4b_cache_at_its_window():
    """E4B at 32,768 tokens, f16: 4 full layers x 32,768 + 16 sliding x 512 token-layers of 2 x 2 x 256 values,
    2 bytes each = 285,212,672 bytes (with every layer its own: 499,122,176)."""
    m = get_model("gemma-3n-e4b")
    assert (m.n_full_cached, m.n_sliding_cached) == (4, 16)
    assert m.kv_cached_elements(32768) * 2 == (4 * 32768 + 16 * 512) * 1024 * 2 == 285_212_672


def test_the_entry_is_the_q8_file_the_rows_ran():
    """calibration-3.csv c3-0255: llama-bench's size of gemma-3n-E4B Q8_0, 7,344,394,076 bytes. Q8_0 (34 bytes per 32)
    with the AltUp, LAuReL and per_layer_model_proj tensors at F16 (llama-quant.cpp leaves them) comes within 0.1 %;
    quantized like the rest, the file would be 49 MB smaller than this."""
    m, q8 = get_model("gemma-3n-e4b"), scheme_for("Q8_0", get_model("gemma-3n-e4b"))
    from tokspeed.ledger import resident_weight_bytes
    assert abs(resident_weight_bytes(m, q8) / 7_344_394_076 - 1) < 0.001
    assert q8.tensor_bytes("per_layer_model_proj", None, 35 * 256, 2048) == 2 * 35 * 256 * 2048
    assert q8.tensor_bytes("per_layer_token_embd", None, 262144, 35 * 256) == 262144 * 35 * 256 * 34 / 32


def test_the_ledger_adds_the_graph_nodes_and_skips_shared_k_v():
    """One decode token of E4B: llama.cpp's extra nodes (gemma3n.cpp) are 2 + 7 + 11 before the layers, 22 + 7 + 9
    in each of 35 layers, 10 in each of the 10 sparse ones, 9 + 3 after: 1,462 kernels. K and V are projected and
    written on 20 layers only: 20 x 2 x 512 values x 2 bytes written."""
    m = get_model("gemma-3n-e4b")
    ops = forward_ops(m, scheme_for("Q8_0", m), 2.0, 1, 1, 100)
    extra = [o for o in ops if o.role is Role.PER_LAYER or "per-layer input gather" in o.name or "top-k" in o.name]
    assert sum(o.kernels * o.count for o in extra) == 1462
    assert sum(o.kv_write_bytes for o in ops) == 20 * 2 * 512 * 2
    k = next(o for o in ops if o.name == "attn_k projection")
    assert k.count == 20 and k.flops == 20 * 2 * 512 * 2048


def test_mixed_matformer_widths_are_refused():
    cfg = {**TINY, "text_config": {**TINY["text_config"], "intermediate_size": [128] * 5 + [64] * 5}}
    with pytest.raises(UserError, match="MatFormer"):
        spec_from_hf_config(cfg)


def test_the_catalog_answers_its_rows_and_the_fit_leaves_them_out():
    """The 4 rows (two MI50s) are answered; fitted, their unmeasured node costs pulled every ROCm model's constants."""
    from tokspeed.calibration.answered import why_unanswered
    from tokspeed.calibration.rows import REPO_CSV3, load_rows
    rows = [r for r in load_rows(REPO_CSV3) if r.model == "gemma-3n-e4b"]
    assert len(rows) == 4 and [why_unanswered(r) for r in rows] == [None] * 4
    assert all(r.skip.startswith("per-layer streams (Gemma 3n): answered, not fitted") for r in rows)
    gemma3 = [r for r in load_rows(REPO_CSV3) if r.model == "gemma-3-12b" and "gfx906" in r.source]
    assert gemma3 and all(r.skip in ("", "multi-device") for r in gemma3)


gguf = pytest.importorskip("gguf")


def test_a_gguf_file_reads_as_its_config(tmp_path):
    """llama.cpp's gemma3n tensors (load_arch_tensors): the spec counts exactly the file's parameters and every tensor
    has a role the ledger asks for. The shared layers are llama.cpp's (from the 20th on): none of these 10."""
    from files_fixtures import finish

    from tokspeed.files.loader import open_model_file
    from tokspeed.predict import predict
    L, d, h, kvh, hd, f, v, V, P, n, r = 10, 64, 4, 2, 16, 128, 100, 50, 8, 4, 4
    t = {"token_embd.weight": (v, d), "output_norm.weight": (d,), "per_layer_token_embd.weight": (V, L * P),
         "per_layer_model_proj.weight": (L * P, d), "per_layer_proj_norm.weight": (P,),
         "altup_proj.weight": (n - 1, d, d), "altup_unembd_proj.weight": (n - 1, d, d)}
    for i in range(L):
        p = f"blk.{i}."
        for norm in ("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm", "post_norm", "altup_router_norm",
                     "laurel_post_norm", "altup_correct_scale"):
            t[p + norm + ".weight"] = (d,)
        t.update({p + "attn_q_norm.weight": (hd,), p + "attn_k_norm.weight": (hd,), p + "attn_q.weight": (h * hd, d),
                  p + "attn_k.weight": (kvh * hd, d), p + "attn_v.weight": (kvh * hd, d),
                  p + "attn_output.weight": (d, h * hd), p + "ffn_gate.weight": (f, d), p + "ffn_up.weight": (f, d),
                  p + "ffn_down.weight": (d, f), p + "inp_gate.weight": (P, d), p + "proj.weight": (d, P),
                  p + "altup_router.weight": (n, d), p + "altup_predict_coef.weight": (n * n, n),
                  p + "altup_correct_coef.weight": (n, n), p + "laurel_l.weight": (r, d), p + "laurel_r.weight": (d, r)})
    w = gguf.GGUFWriter(str(tmp_path / "g3n.gguf"), "gemma3n")
    for key, val in {"block_count": L, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
                     "attention.head_count_kv": kvh, "attention.key_length": hd, "attention.sliding_window": 16,
                     "context_length": 4096, "embedding_length_per_layer_input": P}.items():
        w.add_uint32(f"gemma3n.{key}", val)
    for name, shape in t.items():
        w.add_tensor(name, np.zeros(shape, np.float32 if len(shape) == 1 else np.float16))
    finish(w)
    mf = open_model_file(tmp_path / "g3n.gguf")
    s = mf.spec
    assert (s.ple_dim, s.ple_vocab, s.altup_inputs, s.laurel_rank, s.n_sliding_layers) == (P, V, n, r, 8)
    assert s.kv_shared_layers == 0 and s.sparse_ffn_layers == 10     # llama.cpp: layers from the 20th share
    assert sum(e.elements for e in mf.storage.entries) == s.n_params
    assert all(e.part.role is not None for e in mf.storage.entries)
    p = predict(str(tmp_path / "g3n.gguf"), "h100-sxm").to_dict()
    assert p["memory"]["weights_bytes"] == mf.storage.resident_bytes


@pytest.mark.parametrize("name, role, layer", [
    ("model.language_model.embed_tokens_per_layer.weight", "per_layer_token_embd", None),
    ("model.language_model.per_layer_model_projection.weight", "per_layer_model_proj", None),
    ("model.language_model.altup_projections.2.weight", "altup_proj", None),
    ("model.language_model.altup_unembed_projections.0.weight", "altup_unembd_proj", None),
    ("model.language_model.layers.3.altup.correct_output_scale", "norm", 3),
    ("model.language_model.layers.3.altup.correction_coefs.weight", "altup_correct_coef", 3),
    ("model.language_model.layers.3.altup.prediction_coefs.weight", "altup_predict_coef", 3),
    ("model.language_model.layers.3.altup.modality_router.weight", "altup_router", 3),
    ("model.language_model.layers.3.laurel.linear_left.weight", "laurel_l", 3),
    ("model.language_model.layers.3.laurel.linear_right.weight", "laurel_r", 3),
    ("model.language_model.layers.3.per_layer_input_gate.weight", "inp_gate", 3),
    ("model.language_model.layers.3.per_layer_projection.weight", "proj", 3),
    ("model.language_model.layers.3.post_per_layer_input_norm.weight", "norm", 3),
    ("model.embed_vision.embedding.weight", None, None),        # the multimodal embedders: not the decoder
])
def test_checkpoint_names_have_the_ledgers_roles(name, role, layer):
    """transformers' Gemma3nForConditionalGeneration names (modeling_gemma3n): each decoder tensor has the role the
    ledger asks a storage for; the vision and audio parts are resident only."""
    from tokspeed.files.classify import classify_hf
    part = classify_hf(name)
    assert (part.role, part.layer) == (role, layer)
    assert part.component == "vision" if role is None else part.component != "other"


@pytest.mark.parametrize("field, value, says", [
    ("intermediate_size", [128] * 9 + ["x"], "intermediate_size should be a whole number"),
    ("intermediate_size", [128] * 9 + [0], "intermediate_size should be a whole number"),
    ("hidden_size_per_layer_input", None, "lacks hidden_size_per_layer_input"),
    ("laurel_rank", None, "lacks laurel_rank"),
])
def test_a_broken_gemma3n_config_is_one_line_naming_the_field(field, value, says):
    cfg = {**TINY, "text_config": {**TINY["text_config"], field: value}}
    with pytest.raises(UserError, match=says):
        spec_from_hf_config(cfg)
