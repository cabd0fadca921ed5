"""safetensors / Hugging Face folders / HF cache / Ollama store: exact bytes and resolution."""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

pytest.importorskip("safetensors")
from safetensors.numpy import save_file  # noqa: E402

from files_fixtures import finish, TINY, hf_llama_tensors, llama_config, write_llama_gguf  # noqa: E402

from tokspeed.errors import UserError  # noqa: E402
from tokspeed.files.loader import open_model_file  # noqa: E402
from tokspeed.files.safetensors_reader import read_safetensors_header  # noqa: E402
from tokspeed.resolve import resolve_model  # noqa: E402


def _params(s):
    d, kv = s["d_model"], s["n_kv_heads"] * s["d_model"] // s["n_heads"]
    per_layer = 2 * d * d + 2 * kv * d + 3 * d * s["d_ff"] + 2 * d
    return s["n_layers"] * per_layer + s["vocab"] * d * (1 if s["tied"] else 2) + d


def write_folder(folder, shape=TINY, gptq_bits=0, shards=1, **cfg_extra):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(llama_config(shape, **cfg_extra)))
    tensors = hf_llama_tensors(shape, gptq_bits=gptq_bits)
    if shards == 1:
        save_file(tensors, str(folder / "model.safetensors"))
        return folder
    names = sorted(tensors)
    weight_map = {}
    for i in range(shards):
        part = {n: tensors[n] for n in names[i::shards]}
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file(part, str(folder / fname))
        weight_map.update({n: fname for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


def test_fp16_folder_bytes_and_spec(tmp_path):
    folder = write_folder(tmp_path / "tiny-llama")
    spec, storage = resolve_model(str(folder))
    assert (spec.n_layers, spec.d_model, spec.n_kv_heads, spec.vocab_size) == (2, 64, 2, 256)
    assert storage.resident_bytes == 2 * _params(TINY)              # F16: 2 bytes per parameter
    assert storage.element_bytes("attn_k", 1) == 2.0
    assert storage.tensor_bytes("ffn_down", 0, 64, 128) == 64 * 128 * 2
    assert sum(e.elements for e in storage.entries) == spec.n_params


def test_single_safetensors_file_uses_config_beside_it(tmp_path):
    folder = write_folder(tmp_path / "m")
    spec, storage = resolve_model(str(folder / "model.safetensors"))
    assert spec.n_layers == 2 and storage.resident_bytes == 2 * _params(TINY)


def test_sharded_folder_and_missing_shard(tmp_path):
    folder = write_folder(tmp_path / "sharded", shards=3)
    _, storage = resolve_model(str(folder))
    assert storage.resident_bytes == 2 * _params(TINY)
    (folder / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(UserError, match="missing shard model-00002-of-00003.safetensors"):
        resolve_model(str(folder))


def test_gptq_packed_int4_bytes(tmp_path):
    g = 32
    folder = write_folder(tmp_path / "gptq", gptq_bits=4,
                          quantization_config={"quant_method": "gptq", "bits": 4, "group_size": g})
    mf = open_model_file(folder)
    assert mf.quant == "GPTQ-4B-G32"
    d, n_in, out = 64, 64, 64                                      # q_proj: 64 -> 64
    qweight = n_in // 8 * out * 4                                  # int32 holds 8 4-bit weights
    qzeros = n_in // g * (out // 8) * 4
    scales = n_in // g * out * 2
    g_idx = n_in * 4
    expect = qweight + qzeros + scales + g_idx
    assert mf.storage.tensor_bytes("attn_q", 0, out, n_in) == expect
    assert mf.storage.element_bytes("attn_q", 0) == pytest.approx(expect / (out * n_in))
    down = 128 // 8 * d * 4 + 128 // g * (d // 8) * 4 + 128 // g * d * 2 + 128 * 4
    assert mf.storage.tensor_bytes("ffn_down", 1, d, 128) == down
    # the logical elements of packed weights equal the parameter count
    assert sum(e.elements for e in mf.storage.entries) == mf.spec.n_params


def _raw_safetensors(path, entries: dict):
    """Write a safetensors file by hand (dtypes numpy lacks: F8_E4M3)."""
    header, off, blobs = {}, 0, []
    bits = {"F8_E4M3": 8, "BF16": 16, "F32": 32}
    for name, (dtype, shape) in entries.items():
        n = 1
        for x in shape:
            n *= x
        size = n * bits[dtype] // 8
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + size]}
        blobs.append(b"\0" * size)
        off += size
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def test_fp8_dtype_and_scales(tmp_path):
    folder = tmp_path / "fp8"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(llama_config(TINY, quantization_config={"quant_method": "fp8"})))
    entries = {"model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", (64, 64)),
               "model.layers.0.self_attn.q_proj.weight_scale_inv": ("F32", (1, 1)),
               "model.embed_tokens.weight": ("BF16", (256, 64))}
    _raw_safetensors(folder / "model.safetensors", entries)
    tensors, _ = read_safetensors_header(folder / "model.safetensors")
    assert {t.name: t.dtype for t in tensors}["model.layers.0.self_attn.q_proj.weight"] == "F8_E4M3"
    mf = open_model_file(folder)
    assert mf.storage.tensor_bytes("attn_q", 0, 64, 64) == 64 * 64 + 4
    assert mf.storage.element_bytes("token_embd", None) == 2.0


def test_repo_id_in_hf_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    snap = cache / "models--SomeOrg--tiny-llama" / "snapshots" / "abc123"
    write_folder(snap)
    (cache / "models--SomeOrg--tiny-llama" / "refs").mkdir()
    (cache / "models--SomeOrg--tiny-llama" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    spec, storage = resolve_model("SomeOrg/tiny-llama")
    assert spec.id == "SomeOrg/tiny-llama" and storage.resident_bytes == 2 * _params(TINY)
    # not cached and not a catalog id: the hub (tokspeed.files.hf_hub); offline that is one line
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="needs the network"):
        resolve_model("SomeOrg/not-there")


def _ollama_store(root, gguf_path, name="tiny", tag="q8"):
    data = gguf_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True)
    (root / "blobs" / f"sha256-{digest}").write_bytes(data)
    mdir = root / "manifests" / "registry.ollama.ai" / "library" / name
    mdir.mkdir(parents=True)
    manifest = {"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data)},
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64, "size": 10}]}
    (mdir / tag).write_text(json.dumps(manifest))
    return digest


def test_ollama_store(tmp_path, monkeypatch):
    g = write_llama_gguf(tmp_path / "x.gguf", weight_type="Q8_0")
    root = tmp_path / "ollama"
    _ollama_store(root, g)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    spec, storage = resolve_model("ollama:tiny:q8")
    assert spec.id == "tiny:q8" and spec.n_layers == 2
    assert storage.resident_bytes == open_model_file(g).storage.resident_bytes
    with pytest.raises(UserError, match="not in the Ollama store"):
        resolve_model("ollama:tiny")                               # tag latest is absent


def test_ollama_vision_projector(tmp_path, monkeypatch):
    """A projector layer (CLIP GGUF) is resident as component `vision`, read 0 bytes per text token."""
    import numpy as np

    import gguf

    from tokspeed.files.footprint import footprint

    g = write_llama_gguf(tmp_path / "x.gguf", weight_type="Q8_0")
    root = tmp_path / "ollama"
    _ollama_store(root, g, name="llava")
    proj = tmp_path / "mmproj.gguf"
    w = gguf.GGUFWriter(str(proj), "clip")
    w.add_tensor("v.blk.0.attn_q.weight", np.zeros((64, 64), np.float16))
    w.add_tensor("mm.0.weight", np.zeros((64, 32), np.float16))
    finish(w)
    data = proj.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs" / f"sha256-{digest}").write_bytes(data)
    mpath = root / "manifests" / "registry.ollama.ai" / "library" / "llava" / "q8"
    manifest = json.loads(mpath.read_text())
    manifest["layers"].append({"mediaType": "application/vnd.ollama.image.projector", "digest": f"sha256:{digest}"})
    mpath.write_text(json.dumps(manifest))
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    fp = footprint(open_model_file("ollama:llava:q8"))
    text_only = footprint(open_model_file(g))
    assert fp["components"]["vision"] == {"resident_bytes": (64 * 64 + 64 * 32) * 2, "read_bytes_per_token": 0.0,
                                          "tensors": 2}
    assert fp["totals"]["read_bytes_per_token"] == text_only["totals"]["read_bytes_per_token"]
    # predict: the projector is resident (memory) but not read per text token
    from tokspeed.predict import predict

    with_proj = predict("ollama:llava:q8", "rtx-4090", prompt=0, gen=1)
    alone = predict(str(g), "rtx-4090", prompt=0, gen=1)
    assert with_proj.memory.weights_bytes - alone.memory.weights_bytes == (64 * 64 + 64 * 32) * 2
    assert with_proj.decode.weight_bytes_per_token == alone.decode.weight_bytes_per_token


def test_mixtral_style_experts_folder(tmp_path):
    """Per-expert HF tensors (block_sparse_moe.experts.E.w1/w2/w3) sum into the layer's expert stacks."""
    import numpy as np

    from tokspeed.predict import predict

    d, f, E, L, v = 64, 96, 4, 2, 256
    cfg = {"model_type": "mixtral", "hidden_size": d, "intermediate_size": f, "num_hidden_layers": L,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": v, "num_local_experts": E,
           "num_experts_per_tok": 2, "tie_word_embeddings": False, "max_position_embeddings": 2048}
    t = {"model.embed_tokens.weight": np.zeros((v, d), np.float16), "lm_head.weight": np.zeros((v, d), np.float16),
         "model.norm.weight": np.zeros(d, np.float16)}
    for i in range(L):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = np.zeros(d, np.float16)
        t[p + "post_attention_layernorm.weight"] = np.zeros(d, np.float16)
        for n, shape in (("q_proj", (d, d)), ("k_proj", (32, d)), ("v_proj", (32, d)), ("o_proj", (d, d))):
            t[p + f"self_attn.{n}.weight"] = np.zeros(shape, np.float16)
        t[p + "block_sparse_moe.gate.weight"] = np.zeros((E, d), np.float16)
        for e in range(E):
            for n, shape in (("w1", (f, d)), ("w3", (f, d)), ("w2", (d, f))):
                t[p + f"block_sparse_moe.experts.{e}.{n}.weight"] = np.zeros(shape, np.float16)
    folder = tmp_path / "mixtral-tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    save_file(t, str(folder / "model.safetensors"))
    mf = open_model_file(folder)
    s = mf.spec
    assert (s.n_experts, s.n_active_experts, s.d_ff_expert) == (E, 2, f)
    assert mf.storage.tensor_bytes("ffn_gate_exps", 1, E * f, d) == E * f * d * 2
    assert mf.storage.tensor_bytes("ffn_gate_inp", 0, E, d) == E * d * 2
    assert sum(e.elements for e in mf.storage.entries) == s.n_params
    cfg_only = tmp_path / "cfg"
    cfg_only.mkdir()
    (cfg_only / "config.json").write_text(json.dumps(cfg))
    a = predict(str(folder), "rtx-4090").to_dict()
    b = predict(str(cfg_only), "rtx-4090", quant="F16").to_dict()
    # the router and the norms are F16 in this file but F32 in llama.cpp's F16 scheme: 2 bytes apart each
    f32_in_scheme = L * E * d + (2 * L * d + d)
    assert a["memory"]["weights_bytes"] == b["memory"]["weights_bytes"] - 2 * f32_in_scheme
    assert a["decode"]["weight_bytes_per_token"] == pytest.approx(
        b["decode"]["weight_bytes_per_token"] - 2 * f32_in_scheme, rel=1e-9)
