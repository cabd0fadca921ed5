"""Weights for the reference decoder, keyed by GGUF tensor role (``token_embd``, ``blk.{i}.attn_q`` ...):
random at any shape (decode time does not depend on the values), a Hugging Face safetensors folder,
or a GGUF file dequantized with ``gguf.quants.dequantize``."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UserError
from ..files.loader import open_gguf
from ..models.spec import ModelSpec
from ..userfile import read_json_object

# Hugging Face parameter name (after "model.layers.{i}.") -> GGUF role
_HF_LAYER = {
    "input_layernorm.weight": "attn_norm", "post_attention_layernorm.weight": "ffn_norm",
    "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k", "self_attn.v_proj.weight": "attn_v",
    "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias", "self_attn.o_proj.weight": "attn_output",
    "self_attn.q_norm.weight": "attn_q_norm", "self_attn.k_norm.weight": "attn_k_norm",
    "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down",
    "mlp.gate.weight": "ffn_gate_inp", "block_sparse_moe.gate.weight": "ffn_gate_inp",
    "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp", "mlp.shared_expert.up_proj.weight": "ffn_up_shexp",
    "mlp.shared_expert.down_proj.weight": "ffn_down_shexp", "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp",
}
# per-expert names -> stacked expert role
_HF_EXPERT = {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps", "down_proj": "ffn_down_exps",
              "w1": "ffn_gate_exps", "w3": "ffn_up_exps", "w2": "ffn_down_exps"}


def random_weights(cfg, dtype, device="cpu", seed: int = 0, std: float = 0.02) -> dict:
    """Normal(0, std) matrices and unit norms at the config's shape, made directly in ``dtype``
    on ``device`` (no float32 copy of a large model ever exists)."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    g = torch.Generator(device=device).manual_seed(seed)

    def rnd(*shape):
        return (torch.randn(*shape, generator=g, device=device, dtype=dtype) * std)

    def ones(n):
        return torch.ones(n, device=device, dtype=dtype)

    d, c = cfg.d_model, cfg
    w = {"token_embd": rnd(c.vocab_size, d), "output_norm": ones(d)}
    if not c.tied_embeddings:
        w["output"] = rnd(c.vocab_size, d)
    for i in range(c.n_layers):
        p = f"blk.{i}."
        w.update({p + "attn_norm": ones(d), p + "ffn_norm": ones(d), p + "attn_q": rnd(c.q_dim, d),
                  p + "attn_k": rnd(c.kv_dim, d), p + "attn_v": rnd(c.kv_dim, d), p + "attn_output": rnd(d, c.q_dim)})
        if c.qkv_bias:
            w.update({p + "attn_q.bias": rnd(c.q_dim), p + "attn_k.bias": rnd(c.kv_dim), p + "attn_v.bias": rnd(c.kv_dim)})
        if c.qk_norm:
            w.update({p + "attn_q_norm": ones(c.head_dim), p + "attn_k_norm": ones(c.head_dim)})
        if c.is_moe_layer(i):
            E, f = c.n_experts, c.d_ff_expert
            w.update({p + "ffn_gate_inp": rnd(E, d), p + "ffn_gate_exps": rnd(E, f, d),
                      p + "ffn_up_exps": rnd(E, f, d), p + "ffn_down_exps": rnd(E, d, f)})
            if c.n_shared_experts:
                fs = c.n_shared_experts * c.d_ff_shared
                w.update({p + "ffn_gate_shexp": rnd(fs, d), p + "ffn_up_shexp": rnd(fs, d),
                          p + "ffn_down_shexp": rnd(d, fs)})
                if c.shared_expert_gate:
                    w[p + "ffn_gate_inp_shexp"] = rnd(1, d)
        else:
            w.update({p + "ffn_gate": rnd(c.d_ff, d), p + "ffn_up": rnd(c.d_ff, d), p + "ffn_down": rnd(d, c.d_ff)})
    return w


def _stack_experts(w: dict, experts: dict) -> dict:
    import torch  # lazy: optional dependency (torch, the measure extra)

    for (layer, role), by_index in experts.items():
        w[f"blk.{layer}.{role}"] = torch.stack([by_index[j] for j in sorted(by_index)])
    return w


def safetensors_weights(folder) -> tuple[dict, dict]:
    """(weights by role, config.json) from a Hugging Face folder of ``*.safetensors`` files."""
    from safetensors.torch import load_file  # lazy: optional dependency (safetensors, the files extra)

    folder = Path(folder)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise UserError(f"{folder}: no .safetensors files")

    config = read_json_object(folder / "config.json", "config.json")[1]
    w, experts = {}, {}
    layer_re = re.compile(r"^model\.layers\.(\d+)\.(.+)$")
    expert_re = re.compile(r"^(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(\w+)\.weight$")
    for f in files:
        for name, t in load_file(str(f)).items():
            if name == "model.embed_tokens.weight":
                w["token_embd"] = t
            elif name == "model.norm.weight":
                w["output_norm"] = t
            elif name == "lm_head.weight":
                w["output"] = t
            elif m := layer_re.match(name):
                i, rest = int(m.group(1)), m.group(2)
                if rest in _HF_LAYER:
                    w[f"blk.{i}.{_HF_LAYER[rest]}"] = t
                elif (e := expert_re.match(rest)) and e.group(2) in _HF_EXPERT:
                    experts.setdefault((i, _HF_EXPERT[e.group(2)]), {})[int(e.group(1))] = t
    return _stack_experts(w, experts), config


def _gguf_meta(reader) -> dict:
    meta = {}
    for key, fld in reader.fields.items():
        try:
            meta[key] = fld.contents()
        except Exception:  # array fields of unusual types: not needed for the shape
            pass
    return meta


def _role(tensor_name: str) -> str:
    return tensor_name[:-len(".weight")] if tensor_name.endswith(".weight") else tensor_name


def gguf_tensor_shapes(path) -> tuple[dict, dict]:
    """(metadata, role -> (shape, bytes in the file)) without reading tensor data."""
    from gguf import GGUFReader  # lazy: optional dependency (gguf, the files extra)


    # tokspeed's own header reader first: it checks every count against the file and every hyper-parameter
    # (a FLOAT32 inf block_count, a 2^40-element array) and refuses a hostile file in one line, where
    # GGUFReader would loop or int() would raise (docs/limits.md)
    open_gguf(Path(path))
    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: not a readable GGUF file ({e})") from None
    shapes = {_role(t.name): (tuple(int(n) for n in reversed(t.shape)), int(t.n_bytes)) for t in reader.tensors}
    return _gguf_meta(reader), shapes


def gguf_weights(path) -> tuple[dict, dict]:
    """(weights by role as float32 tensors, metadata) from a GGUF file; quantized tensors are
    dequantized with gguf.quants.dequantize."""
    import numpy as np  # lazy: optional dependency (numpy, the files/measure extra)
    import torch  # lazy: optional dependency (torch, the measure extra)
    from gguf import GGUFReader  # lazy: optional dependency (gguf, the files extra)
    from gguf.quants import dequantize  # lazy: optional dependency (gguf, the files extra)

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: not a readable GGUF file ({e})") from None
    meta = _gguf_meta(reader)
    w = {}
    for t in reader.tensors:
        arr = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        arr = arr.reshape(tuple(int(n) for n in reversed(t.shape)))
        w[_role(t.name)] = torch.from_numpy(np.array(arr, dtype=np.float32))  # a writable copy
    return w, meta


# llama.cpp rotates adjacent pairs (LLAMA_ROPE_TYPE_NORM) for these architectures, whose Q/K the
# converter permuted; the others use the half-split (NEOX) rotation of the Hugging Face weights.
_GGUF_NORM_ROPE = {"llama", "mixtral", "granite", "granitemoe", "deci", "baichuan", "orion", "minicpm"}


def spec_from_gguf(meta: dict, shapes: dict, name: str):
    """A ModelSpec and decoder overrides from GGUF metadata and the tensors present
    (``shapes``: role -> (shape, bytes), from ``gguf_tensor_shapes``)."""
    arch = meta.get("general.architecture", "llama")

    def get(key, default=None):
        return meta.get(f"{arch}.{key}", default)

    d = int(get("embedding_length"))
    heads = int(get("attention.head_count"))
    kv = get("attention.head_count_kv", heads)
    n_layers = int(get("block_count"))
    experts = int(get("expert_count", 0) or 0)
    spec = ModelSpec(
        id=name, name=str(meta.get("general.name", name)), family=arch, n_layers=n_layers, d_model=d,
        n_heads=heads, n_kv_heads=int(kv if not isinstance(kv, list) else kv[0]),
        head_dim=int(get("attention.key_length", 0) or 0), d_ff=int(get("feed_forward_length", 0) or 0),
        vocab_size=int(shapes["token_embd"][0][0]), tied_embeddings="output" not in shapes,
        rope_theta=float(get("rope.freq_base", 10000.0)), max_context=int(get("context_length", 4096)),
        qkv_bias="blk.0.attn_q.bias" in shapes, qk_norm="blk.0.attn_q_norm" in shapes,
        n_experts=experts, n_active_experts=int(get("expert_used_count", 0) or 0),
        d_ff_expert=int(get("expert_feed_forward_length", 0) or 0) or
        (int(shapes["blk.0.ffn_gate_exps"][0][1]) if experts else 0),
    )
    over = {"norm_eps": float(get("attention.layer_norm_rms_epsilon", 1e-5)), "rope_interleaved": arch in _GGUF_NORM_ROPE}
    return spec, over


def hf_overrides(config: dict, weights: dict) -> dict:
    """Decoder settings a config.json or the tensors give beyond the ModelSpec."""
    return {"norm_eps": float(config.get("rms_norm_eps", 1e-5)), "qkv_bias": "blk.0.attn_q.bias" in weights,
            "qk_norm": "blk.0.attn_q_norm" in weights}
