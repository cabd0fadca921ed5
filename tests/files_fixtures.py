"""Model files written by the tests themselves (gguf.GGUFWriter, safetensors), never downloaded.

Quantized tensors are written as raw blocks (zero bytes) of the right size for their GGML type;
the readers never look at tensor data, only at the header.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# SmolLM2-135M (https://huggingface.co/HuggingFaceTB/SmolLM2-135M/blob/main/config.json)
SMOLLM2_135M = dict(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, d_ff=1536, vocab=49152, tied=True,
                    rope_theta=100000.0, context=8192)
TINY = dict(n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128, vocab=256, tied=False,
            rope_theta=10000.0, context=2048)


def finish(writer) -> None:
    """Write a GGUFWriter's header, metadata and tensors, and close it."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _raw(gguf, writer, name, rows, cols, qtype):
    """A rows x cols tensor of GGML type ``qtype`` (name), data zero bytes."""
    t = gguf.GGMLQuantizationType[qtype]
    block, size = gguf.GGML_QUANT_SIZES[t]
    if qtype == "F32":
        writer.add_tensor(name, np.zeros((rows, cols), dtype=np.float32) if rows > 1 else np.zeros(cols, np.float32))
        return
    if qtype == "F16":
        writer.add_tensor(name, np.zeros((rows, cols), dtype=np.float16))
        return
    data = np.zeros((rows, cols // block * size), dtype=np.uint8)
    writer.add_tensor(name, data, raw_dtype=t)


def write_llama_gguf(path: Path, shape=TINY, weight_type="Q8_0", embd_type=None, output_type=None,
                     arch="llama", tokenizer=None, name="test-model", moe: dict | None = None, extra_kv=None):
    """A llama-architecture GGUF with every tensor of the model (2-D weights in ``weight_type``,
    norms F32). ``moe``: dict(n_experts, n_active, d_ff_expert[, shared_d_ff]) makes every FFN an MoE."""
    import gguf

    s = shape
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_block_count(s["n_layers"])
    w.add_embedding_length(s["d_model"])
    w.add_feed_forward_length(s["d_ff"])
    w.add_head_count(s["n_heads"])
    w.add_head_count_kv(s["n_kv_heads"])
    w.add_context_length(s["context"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(1e-5)
    if moe:
        w.add_expert_count(moe["n_experts"])
        w.add_expert_used_count(moe["n_active"])
        w.add_expert_feed_forward_length(moe["d_ff_expert"])
    if tokenizer:
        tokenizer(w)
    for k, v in (extra_kv or {}).items():      # last: overrides what the lines above wrote
        w.add_key_value(k, v[0], v[1])
    d, hd = s["d_model"], s["d_model"] // s["n_heads"]
    kv = s["n_kv_heads"] * hd
    _raw(gguf, w, "token_embd.weight", s["vocab"], d, embd_type or weight_type)
    for i in range(s["n_layers"]):
        p = f"blk.{i}."
        _raw(gguf, w, p + "attn_norm.weight", 1, d, "F32")
        _raw(gguf, w, p + "attn_q.weight", d, d, weight_type)
        _raw(gguf, w, p + "attn_k.weight", kv, d, weight_type)
        _raw(gguf, w, p + "attn_v.weight", kv, d, weight_type)
        _raw(gguf, w, p + "attn_output.weight", d, d, weight_type)
        _raw(gguf, w, p + "ffn_norm.weight", 1, d, "F32")
        if moe:
            e, f = moe["n_experts"], moe["d_ff_expert"]
            _raw(gguf, w, p + "ffn_gate_inp.weight", e, d, "F32")
            for role, (r, c) in (("ffn_gate_exps", (f, d)), ("ffn_up_exps", (f, d)), ("ffn_down_exps", (d, f))):
                t = gguf.GGMLQuantizationType[weight_type]
                block, size = gguf.GGML_QUANT_SIZES[t]
                w.add_tensor(p + role + ".weight", np.zeros((e, r, c // block * size), dtype=np.uint8), raw_dtype=t)
        else:
            _raw(gguf, w, p + "ffn_gate.weight", s["d_ff"], d, weight_type)
            _raw(gguf, w, p + "ffn_up.weight", s["d_ff"], d, weight_type)
            _raw(gguf, w, p + "ffn_down.weight", d, s["d_ff"], weight_type)
    _raw(gguf, w, "output_norm.weight", 1, d, "F32")
    if not s["tied"]:
        _raw(gguf, w, "output.weight", s["vocab"], d, output_type or weight_type)
    finish(w)
    return path


def write_loadable_llama(path: Path, shape: dict, weight_type: str = "Q8_0", name: str = "test-model") -> Path:
    """``write_llama_gguf`` with every 2-D tensor in ``weight_type`` and an SPM vocabulary of the shape's size
    (``<unk>``, ``<s>``, ``</s>``, the 256 byte tokens, fillers) that llama.cpp loads, runs and benchmarks: the
    files scripts/record_llama_bench_here.py and benchmarks/bench_cpu_attention.py hand to llama-bench."""
    v = shape["vocab"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581t{i}" for i in range(v - len(tokens))]
    return write_llama_gguf(path, shape=shape, weight_type=weight_type, embd_type=weight_type,
                            output_type=weight_type, name=name, tokenizer=spm_tokenizer_kv(tokens, [0.0] * v))


# ---- tokenizers ------------------------------------------------------------------------------
def byte_level_bpe(corpus: list[str], vocab_size: int = 400):
    """A byte-level BPE trained (by the `tokenizers` package) on ``corpus``: (tokens, merges)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False, special_tokens=["<|endoftext|>"])
    tok.train_from_iterator(corpus, trainer)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    return tok, tokens, merges


def gpt2_tokenizer_kv(tokens, merges, pre="default"):
    def add(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(tokens)
        w.add_token_merges(merges)
        w.add_token_types([1] * len(tokens))
        w.add_bos_token_id(0)
        w.add_add_bos_token(False)
    return add


def spm_tokenizer_kv(tokens, scores, add_bos=True):
    def add(w):
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types([1] * len(tokens))
        w.add_bos_token_id(1)
        w.add_unk_token_id(0)
        w.add_add_bos_token(add_bos)
    return add


# ---- safetensors / HF folders ----------------------------------------------------------------
def llama_config(shape=TINY, **extra) -> dict:
    s = shape
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": s["d_model"],
           "intermediate_size": s["d_ff"], "num_hidden_layers": s["n_layers"], "num_attention_heads": s["n_heads"],
           "num_key_value_heads": s["n_kv_heads"], "vocab_size": s["vocab"], "tie_word_embeddings": s["tied"],
           "rope_theta": s["rope_theta"], "max_position_embeddings": s["context"], "torch_dtype": "bfloat16"}
    cfg.update(extra)
    return cfg


def hf_llama_tensors(shape=TINY, gptq_bits: int = 0, group: int = 32) -> dict:
    """name -> numpy array for a llama checkpoint (fp16; or GPTQ-packed projections)."""
    s = shape
    d, hd = s["d_model"], s["d_model"] // s["n_heads"]
    kv = s["n_kv_heads"] * hd
    out = {"model.embed_tokens.weight": np.zeros((s["vocab"], d), np.float16),
           "model.norm.weight": np.zeros(d, np.float16)}
    if not s["tied"]:
        out["lm_head.weight"] = np.zeros((s["vocab"], d), np.float16)
    projs = {"self_attn.q_proj": (d, d), "self_attn.k_proj": (kv, d), "self_attn.v_proj": (kv, d),
             "self_attn.o_proj": (d, d), "mlp.gate_proj": (s["d_ff"], d), "mlp.up_proj": (s["d_ff"], d),
             "mlp.down_proj": (d, s["d_ff"])}
    for i in range(s["n_layers"]):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = np.zeros(d, np.float16)
        out[p + "post_attention_layernorm.weight"] = np.zeros(d, np.float16)
        for name, (o, n_in) in projs.items():
            if gptq_bits:
                per = 32 // gptq_bits
                out[p + name + ".qweight"] = np.zeros((n_in // per, o), np.int32)
                out[p + name + ".qzeros"] = np.zeros((n_in // group, o // per), np.int32)
                out[p + name + ".scales"] = np.zeros((n_in // group, o), np.float16)
                out[p + name + ".g_idx"] = np.zeros(n_in, np.int32)
            else:
                out[p + name + ".weight"] = np.zeros((o, n_in), np.float16)
    return out
