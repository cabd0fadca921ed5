"""Fixtures shared by the web tests."""

import pytest


def tiny_llama_gguf(path):
    """A 2-layer Llama GGUF written with the reference ``gguf`` package (tensors zero, F16/F32)."""
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    d, h, kvh, f, v, L = 64, 4, 2, 128, 256, 2
    w = gguf.GGUFWriter(str(path), "llama")
    for key, val in {"block_count": L, "embedding_length": d, "feed_forward_length": f, "attention.head_count": h,
                     "attention.head_count_kv": kvh, "context_length": 2048}.items():
        w.add_uint32(f"llama.{key}", val)
    t = {"token_embd.weight": (v, d), "output_norm.weight": (d,), "output.weight": (v, d)}
    for i in range(L):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": (d,), p + "ffn_norm.weight": (d,), p + "attn_q.weight": (d, d),
                  p + "attn_k.weight": (kvh * 16, d), p + "attn_v.weight": (kvh * 16, d),
                  p + "attn_output.weight": (d, d), p + "ffn_gate.weight": (f, d), p + "ffn_up.weight": (f, d),
                  p + "ffn_down.weight": (d, f)})
    for name, shape in t.items():
        w.add_tensor(name, np.zeros(shape, np.float32 if len(shape) == 1 else np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
