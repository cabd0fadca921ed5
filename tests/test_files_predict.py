"""Acceptance: ``predict`` on a real file equals ``predict`` on the same catalog model and quant (0.5 %).

The SmolLM2-135M GGUFs below hold the full tensor list with the real shapes (30 layers, d_model
576, 9 heads / 3 KV heads, d_ff 1536, vocab 49152, tied embeddings), quantized blocks written as
raw bytes. The file path goes through the GGUF reader and FileStorage; the catalog path through
the quant scheme's formulas: two independent routes to the same bytes.
"""

from __future__ import annotations

import json

import pytest

gguf = pytest.importorskip("gguf")

from files_fixtures import finish, SMOLLM2_135M, TINY, hf_llama_tensors, llama_config, write_llama_gguf  # noqa: E402

from tokspeed.predict import predict  # noqa: E402

HW = "rtx-4090"


def _close(a: dict, b: dict, rel=0.005):
    for k in ("weights_bytes", "kv_bytes", "total_bytes"):
        assert a["memory"][k] == pytest.approx(b["memory"][k], rel=rel), k
    for k in ("weight_bytes_per_token", "kv_bytes_per_token", "bytes_per_token"):
        assert a["decode"][k] == pytest.approx(b["decode"][k], rel=rel), k
    assert a["decode"]["tok_s"] == pytest.approx(b["decode"]["tok_s"], rel=rel)


@pytest.fixture(scope="module")
def smollm2_q8(tmp_path_factory):
    p = tmp_path_factory.mktemp("smol") / "SmolLM2-135M-Q8_0.gguf"
    return write_llama_gguf(p, shape=SMOLLM2_135M, weight_type="Q8_0", name="SmolLM2 135M",
                            extra_kv={"general.file_type": (7, gguf.GGUFValueType.UINT32)})


def test_smollm2_q8_file_equals_catalog(smollm2_q8):
    a = predict(str(smollm2_q8), HW).to_dict()
    b = predict("smollm2-135m", HW, quant="Q8_0").to_dict()
    assert a["quant"] == "Q8_0"
    _close(a, b)
    # and the file's bytes, by hand: every 2-D weight Q8_0 (34 bytes per 32), norms F32
    d, f, v, L, kv = 576, 1536, 49152, 30, 3 * 64
    q8 = 34 / 32
    weights = q8 * (v * d + L * (2 * d * d + 2 * kv * d + 3 * d * f)) + 4 * (2 * L * d + d)
    assert a["memory"]["weights_bytes"] == weights
    assert smollm2_q8.stat().st_size > weights


def test_smollm2_q4_k_m_file_equals_catalog(tmp_path):
    """Q4_K_M with llama.cpp's mix; 576-wide rows are not whole 256-blocks, so llama.cpp falls back
    (Q4_K -> Q5_0, Q6_K -> Q8_0) except for ffn_down (1536-wide rows): the file holds five types."""
    from tokspeed.quant.llamacpp_mix import tensor_type

    import numpy as np

    s = SMOLLM2_135M
    d, f, v, L, kv = s["d_model"], s["d_ff"], s["vocab"], s["n_layers"], 3 * 64
    w = gguf.GGUFWriter(str(tmp_path / "smol-q4km.gguf"), "llama")
    for key, val in (("block_count", L), ("embedding_length", d), ("feed_forward_length", f),
                     ("attention.head_count", 9), ("attention.head_count_kv", 3), ("context_length", 8192)):
        w.add_uint32(f"llama.{key}", val)
    w.add_float32("llama.rope.freq_base", s["rope_theta"])
    w.add_uint32("general.file_type", 15)                           # LLAMA_FTYPE_MOSTLY_Q4_K_M

    def add(name, role, layer, rows, cols):
        t = tensor_type("Q4_K_M", role, layer, L, cols, n_gqa=3)
        qt = gguf.GGMLQuantizationType[t]
        block, size = gguf.GGML_QUANT_SIZES[qt]
        w.add_tensor(name, np.zeros((rows, cols // block * size), np.uint8), raw_dtype=qt)

    add("token_embd.weight", "output", None, v, d)                 # tied: the embedding is the output
    for i in range(L):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.zeros(d, np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.zeros(d, np.float32))
        for role, rows, cols in (("attn_q", d, d), ("attn_k", kv, d), ("attn_v", kv, d), ("attn_output", d, d),
                                 ("ffn_gate", f, d), ("ffn_up", f, d), ("ffn_down", d, f)):
            add(p + role + ".weight", role, i, rows, cols)
    w.add_tensor("output_norm.weight", np.zeros(d, np.float32))
    finish(w)
    from tokspeed.files.loader import open_model_file

    mf = open_model_file(tmp_path / "smol-q4km.gguf")
    assert set(mf.storage.type_counts()) == {"Q5_0", "Q8_0", "Q4_K", "Q6_K", "F32"}
    a = predict(str(tmp_path / "smol-q4km.gguf"), HW).to_dict()
    b = predict("smollm2-135m", HW, quant="Q4_K_M").to_dict()
    assert a["quant"] == "Q4_K_M"
    _close(a, b)


def test_hf_folder_equals_its_config(tmp_path):
    """F16 safetensors folder vs the same config.json alone at --quant F16."""
    from safetensors.numpy import save_file

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(llama_config(TINY)))
    (tmp_path / "config-only").mkdir()
    (tmp_path / "config-only" / "config.json").write_text(json.dumps(llama_config(TINY)))
    save_file(hf_llama_tensors(TINY), str(folder / "model.safetensors"))
    a = predict(str(folder), HW).to_dict()
    b = predict(str(tmp_path / "config-only"), HW, quant="F16").to_dict()
    _close(a, b)


def test_inspect_totals_are_what_predict_uses(smollm2_q8, tmp_path):
    """`tokspeed inspect` resident/read totals = predict's weights_bytes / weight_bytes_per_token
    (dense tied model, and an MoE whose token reads 2 of 8 experts)."""
    from tokspeed.files.footprint import footprint
    from tokspeed.files.loader import open_model_file

    moe = write_llama_gguf(tmp_path / "moe.gguf", shape=dict(TINY, d_model=256, d_ff=512, vocab=1024),
                           weight_type="Q4_K", embd_type="Q6_K", output_type="Q6_K",
                           moe=dict(n_experts=8, n_active=2, d_ff_expert=256))
    for path in (smollm2_q8, moe):
        fp = footprint(open_model_file(path))
        p = predict(str(path), HW).to_dict()
        # llama.cpp keeps the token embedding in host RAM; a tied model's output layer is a copy of it on the GPU
        # SmolLM2: 49,152 x 576 at Q8_0 (34 B per 32); the MoE: 1,024 x 256 at Q6_K (210 B per 256)
        embd = 49152 * 576 * 34 // 32 if path == smollm2_q8 else 1024 * 256 * 210 // 256
        assert p["memory"]["host_bytes"] == embd
        on_gpu = fp["totals"]["resident_bytes"] - (0 if path == smollm2_q8 else embd)
        assert on_gpu == pytest.approx(p["memory"]["weights_bytes"], rel=1e-9)
        assert fp["totals"]["read_bytes_per_token"] == pytest.approx(p["decode"]["weight_bytes_per_token"],
                                                                     rel=0.005)
