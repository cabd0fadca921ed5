"""Write a GGUF file (llama architecture, no vocabulary) from role-keyed weights: lets llama.cpp
run exactly the shape and values the reference decoder runs, with no model download."""

from __future__ import annotations

from pathlib import Path


BYTE_VOCAB_SIZE = 259   # 256 byte tokens + one merge ("Ġa") + <s> + </s>


def _bytes_to_unicode() -> dict:
    """GPT-2's byte -> printable character map, which llama.cpp's BPE vocabularies use."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def _add_byte_vocab(w) -> None:
    """A byte-level BPE vocabulary (every UTF-8 byte is a token): real tokenization with no
    download. Korean text becomes 3 tokens per syllable."""
    from gguf import TokenType  # lazy: optional dependency (gguf, the files extra)

    b2u = _bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)] + [b2u[32] + "a", "<s>", "</s>"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([TokenType.NORMAL] * 257 + [TokenType.CONTROL] * 2)
    w.add_token_merges([b2u[32] + " a"])   # llama.cpp requires at least one merge
    w.add_bos_token_id(257)
    w.add_eos_token_id(258)


def write_gguf(path, cfg, weights: dict, dtype: str = "F32", name: str = "tokspeed-random",
               context_length: int = 4096, byte_vocab: bool = False) -> Path:
    """``weights``: role -> tensor/array [out, in] (as ``weights.random_weights`` gives);
    ``dtype`` F32 or F16 for the matrices (norms stay F32, as llama.cpp's converter keeps them).
    Q and K are stored for llama.cpp's adjacent-pair rotation, so a GGUF loader must set
    ``rope_interleaved`` (``weights.spec_from_gguf`` does, from the architecture). ``byte_vocab``
    adds a byte-level tokenizer (cfg.vocab_size must be BYTE_VOCAB_SIZE); otherwise no vocabulary."""
    import numpy as np  # lazy: optional dependency (numpy, the files/measure extra)
    from gguf import GGUFWriter, LlamaFileType  # lazy: optional dependency (gguf, the files extra)

    if cfg.n_experts or cfg.qkv_bias or cfg.qk_norm:
        raise ValueError("write_gguf writes dense llama-architecture models only")
    w = GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_block_count(cfg.n_layers)
    w.add_context_length(context_length)
    w.add_embedding_length(cfg.d_model)
    w.add_feed_forward_length(cfg.d_ff)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(cfg.n_kv_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    if byte_vocab:
        if cfg.vocab_size != BYTE_VOCAB_SIZE:
            raise ValueError(f"a byte vocabulary has {BYTE_VOCAB_SIZE} tokens, the model {cfg.vocab_size}")
        _add_byte_vocab(w)
    else:
        w.add_tokenizer_model("no_vocab")
    f16 = dtype.upper() == "F16"
    w.add_file_type(LlamaFileType.MOSTLY_F16 if f16 else LlamaFileType.ALL_F32)
    mat = np.float16 if f16 else np.float32
    for role, t in weights.items():
        arr = t.float().numpy() if hasattr(t, "numpy") else np.asarray(t, dtype=np.float32)
        is_norm = role.endswith("norm")
        w.add_tensor(role + ".weight", arr.astype(np.float32 if is_norm else mat))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)
