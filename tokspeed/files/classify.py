"""Tensor name -> (role, layer, component): what a weight does, from its name in a GGUF or HF file.

Roles are the GGUF names of ``tokspeed.quant.storage.ROLES`` (plus ``attn_qkv``, ``ffn_gate_up`` and
``ffn_gate_up_exps`` for fused projections and ``ffn_gate_inp_shexp`` for Qwen2-MoE's shared-expert
gate). Components are the lines of ``tokspeed inspect``: embedding, attention, ffn, experts,
shared_experts, router, lm_head, norms, other (unrecognised layer weights: read every token) and
vision (image encoders/projectors: resident, not read when decoding text).

A tensor's ``kind`` is ``weight`` (the tensor whose elements count as the weight: ``.weight``,
GPTQ/AWQ ``.qweight``, gpt-oss ``_blocks``), ``aux`` (bytes that belong to that weight but are not
its elements: ``scales``, ``qzeros``, ``g_idx``, FP8 ``weight_scale(_inv)``), or ``bias``. Biases and
norm vectors have role ``norm`` (small vectors kept in F32), as the WeightStorage protocol says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMPONENTS = ("embedding", "attention", "ffn", "experts", "shared_experts", "router", "lm_head",
              "per_layer", "norms", "other", "vision")

ROLE_COMPONENT = {
    "token_embd": "embedding", "output": "lm_head",
    "attn_q": "attention", "attn_k": "attention", "attn_v": "attention", "attn_output": "attention",
    "attn_qkv": "attention", "attn_q_a": "attention", "attn_q_b": "attention",
    "attn_kv_a_mqa": "attention", "attn_kv_b": "attention", "attn_k_b": "attention", "attn_v_b": "attention",
    "ffn_gate": "ffn", "ffn_up": "ffn", "ffn_down": "ffn", "ffn_gate_up": "ffn",
    "ffn_gate_inp": "router",
    "ffn_gate_exps": "experts", "ffn_up_exps": "experts", "ffn_down_exps": "experts",
    "ffn_gate_up_exps": "experts",
    "ffn_gate_shexp": "shared_experts", "ffn_up_shexp": "shared_experts", "ffn_down_shexp": "shared_experts",
    "ffn_gate_up_shexp": "shared_experts", "ffn_gate_inp_shexp": "shared_experts",
    "norm": "norms",
    # Gemma 3n: the per-layer input table is an embedding (one row read per token); its projection, AltUp's and
    # LAuReL's matrices and the per-layer gate / projection are read whole (models/tensors.py)
    "per_layer_token_embd": "embedding",
    **{r: "per_layer" for r in ("per_layer_model_proj", "inp_gate", "proj", "altup_proj", "altup_unembd_proj",
                                "altup_router", "altup_predict_coef", "altup_correct_coef", "laurel_l", "laurel_r")},
}


@dataclass(frozen=True)
class Part:
    role: str | None        # None: not a transformer weight we know (component other/vision)
    layer: int | None
    component: str
    kind: str = "weight"    # weight | aux | bias


_VISION = re.compile(r"^(v\.|mm\.|mmproj|vision_tower|vision_model|visual\.|multi_modal_projector|mm_projector"
                     r"|model\.vision|model\.visual|model\.multi_modal|audio_tower|model\.audio|model\.embed_vision"
                     r"|model\.embed_audio)")

# ---- GGUF ------------------------------------------------------------------------------------
_GGUF_BLK = re.compile(r"^blk\.(\d+)\.(.+?)(?:\.(weight|bias|scale))?$")
_GGUF_BIAS_ROLES = {"exp_probs_b": "router", "attn_sinks": "attention"}
_GGUF_VECTORS = {"altup_correct_scale": "per_layer"}       # 1-D weights whose names do not say norm (Gemma 3n)


def classify_gguf(name: str) -> Part:
    if _VISION.match(name):
        return Part(None, None, "vision")
    m = _GGUF_BLK.match(name)
    if m:
        layer, base, suffix = int(m.group(1)), m.group(2), m.group(3) or "weight"
    else:
        base, _, suffix = name.rpartition(".")
        if suffix not in ("weight", "bias"):
            base, suffix = name, "weight"
        layer = None
    return _from_role_name(base, layer, "bias" if suffix == "bias" else "weight")


def _from_role_name(base: str, layer: int | None, kind: str) -> Part:
    if base in _GGUF_BIAS_ROLES:
        return Part("norm", layer, _GGUF_BIAS_ROLES[base], "bias")
    if "norm" in base:
        return Part("norm", layer, "norms", kind)
    if base in _GGUF_VECTORS:
        return Part("norm", layer, _GGUF_VECTORS[base], kind)
    comp = ROLE_COMPONENT.get(base)
    if comp is None:
        return Part(None, layer, "other", kind)
    if kind == "bias":
        return Part("norm", layer, comp, "bias")
    return Part(base, layer, comp, kind)


# ---- Hugging Face (safetensors) --------------------------------------------------------------
_HF_PREFIX = re.compile(r"^(?:model\.language_model\.|language_model\.model\.|language_model\.|model\.model\."
                        r"|model\.|transformer\.|gpt_neox\.|backbone\.)")
_HF_LAYER = re.compile(r"^(?:layers|h|blocks|decoder\.layers)\.(\d+)\.(.+)$")
_AUX = ("qzeros", "scales", "g_idx", "weight_scale", "weight_scale_inv", "input_scale", "weight_zero_point",
        "weight_packed", "weight_shape", "output_scale", "k_scale", "v_scale")
_HF_TOP = {"embed_tokens": "token_embd", "wte": "token_embd", "word_embeddings": "token_embd",
           "tok_embeddings": "token_embd", "embed_in": "token_embd", "embeddings": "token_embd",
           "lm_head": "output", "embed_out": "output", "output": "output",
           # Gemma 3n (transformers modeling_gemma3n): the per-layer input table and projection, AltUp's copies
           "embed_tokens_per_layer": "per_layer_token_embd", "per_layer_model_projection": "per_layer_model_proj",
           "altup_projections": "altup_proj", "altup_unembed_projections": "altup_unembd_proj"}
_HF_PROJ = {  # last module name -> role (dense)
    "q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
    "dense": "attn_output", "out_proj": "attn_output", "c_proj": None, "wq": "attn_q", "wk": "attn_k",
    "wv": "attn_v", "wo": "attn_output", "qkv_proj": "attn_qkv", "c_attn": "attn_qkv",
    "query_key_value": "attn_qkv", "Wqkv": "attn_qkv",
    "q_a_proj": "attn_q_a", "q_b_proj": "attn_q_b", "kv_a_proj_with_mqa": "attn_kv_a_mqa",
    "kv_b_proj": "attn_kv_b",
    "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down", "gate_up_proj": "ffn_gate_up",
    "w1": "ffn_gate", "w3": "ffn_up", "w2": "ffn_down", "fc1": "ffn_up", "fc2": "ffn_down",
    "c_fc": "ffn_up", "dense_h_to_4h": "ffn_up", "dense_4h_to_h": "ffn_down", "fc_in": "ffn_up",
    "fc_out": "ffn_down",
    "per_layer_input_gate": "inp_gate", "per_layer_projection": "proj", "modality_router": "altup_router",
    "prediction_coefs": "altup_predict_coef", "correction_coefs": "altup_correct_coef", "linear_left": "laurel_l",
    "linear_right": "laurel_r",
}
_HF_VECTORS = ("correct_output_scale",)    # a 1-D parameter named without .weight (Gemma 3n AltUp)


def classify_hf(name: str) -> Part:
    if _VISION.match(name):
        return Part(None, None, "vision")
    rest = _HF_PREFIX.sub("", name, count=1)
    parts = rest.split(".")
    kind, last = "weight", parts[-1]
    if last in _HF_VECTORS:
        m = _HF_LAYER.match(".".join(parts))
        return Part("norm", int(m.group(1)) if m else None, "per_layer")
    if last in ("weight", "qweight") or last.endswith("_blocks"):
        parts = parts[:-1] if last in ("weight", "qweight") else parts[:-1] + [last[: -len("_blocks")]]
    elif last == "bias":
        kind, parts = "bias", parts[:-1]
    elif last in _AUX or last.endswith("_scales") or last.endswith("_scale"):
        kind = "aux"
        parts = parts[:-1] if last in _AUX else parts[:-1] + [last.rsplit("_", 1)[0]]
    elif last.endswith("_bias"):
        kind, parts = "bias", parts[:-1] + [last[: -len("_bias")]]
    m = _HF_LAYER.match(".".join(parts))
    if not m:
        base = parts[-1] if parts else ""
        if base.isdigit() and len(parts) > 1:       # one of a list of matrices (Gemma 3n altup_projections.0)
            base = parts[-2]
        if "norm" in base or base in ("ln_f", "final_layernorm"):
            return Part("norm", None, "norms", kind)
        role = _HF_TOP.get(base)
        if role is None:
            return Part(None, None, "other", kind)
        return Part("norm" if kind == "bias" else role, None, ROLE_COMPONENT[role], kind)
    layer, sub = int(m.group(1)), m.group(2).split(".")
    leaf = sub[-1] if sub else ""
    if "norm" in leaf or leaf.startswith("ln_"):
        return Part("norm", layer, "norms", kind)
    if leaf in ("sinks",):
        return Part("norm", layer, "attention", "bias")
    in_moe = any(s in ("experts", "shared_expert", "shared_experts", "block_sparse_moe") for s in sub) or \
        (leaf in ("gate", "router") and len(sub) >= 2 and sub[-2] in ("mlp", "block_sparse_moe", "moe"))
    if leaf == "e_score_correction":          # DeepSeek-V3 router bias
        return Part("norm", layer, "router", "bias")
    if leaf in ("gate", "router") and in_moe:
        return Part("norm" if kind == "bias" else "ffn_gate_inp", layer, "router", kind)
    if leaf == "shared_expert_gate":
        return Part("norm" if kind == "bias" else "ffn_gate_inp_shexp", layer, "shared_experts", kind)
    role = _HF_PROJ.get(leaf)
    if leaf == "c_proj":      # GPT-2: attn.c_proj vs mlp.c_proj
        role = "attn_output" if "attn" in sub else "ffn_down"
    if leaf == "dense" and "mlp" in sub:
        role = None
    if role is None:
        return Part(None, layer, "other", kind)
    if role.startswith("ffn_") and ("shared_expert" in sub or "shared_experts" in sub):
        role, comp = role + "_shexp", "shared_experts"
    elif role.startswith("ffn_") and "experts" in sub:
        role, comp = role + "_exps", "experts"
    else:
        comp = ROLE_COMPONENT[role]
    if kind == "bias":
        return Part("norm", layer, comp, "bias")
    return Part(role, layer, comp, kind)
