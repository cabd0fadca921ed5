"""Which GGML type llama.cpp's ``llama-quantize`` gives each tensor for a mixed ftype (Q4_K_M, IQ2_M ...).

A transcription of ``llama_tensor_get_type_impl`` and ``tensor_type_fallback`` in llama.cpp ``src/llama-quant.cpp``
(the copy vendored by llama-cpp-python 0.3.36) for every ftype ``llama-quantize`` offers, restricted to the decoder
roles tokspeed models. The state it keeps (``i_attention_wv``, ``i_ffn_down``) is the layer index here. Files made
without an importance matrix are assumed where the rules differ (IQ3_XXS attn_v / ffn_down, IQ4 ffn_down): the
default of ``llama-quantize``; published IQ1/IQ2 files need one and take the rules that do not depend on it.
"""

from __future__ import annotations

from .format_table import converted_type, gguf_ftypes
from .storage import KEPT_AS_CONVERTED

# ftype -> default type of a 2-D weight (llama_model_quantize_impl's switch on ftype): formats.toml main_type
DEFAULT = gguf_ftypes()

# types of 256-weight blocks need rows that are a multiple of 256; otherwise llama.cpp falls back. Q2_K/Q3_K keep
# the IQ4_NL of the builds this table was first written from (a 2026 build takes Q4_0: same 4.5 bpw).
FALLBACK = {"Q2_K": "IQ4_NL", "Q3_K": "IQ4_NL", "IQ4_XS": "IQ4_NL", "Q4_K": "Q5_0", "Q5_K": "Q5_1",
            "Q6_K": "Q8_0", "IQ1_S": "IQ4_NL", "IQ1_M": "IQ4_NL", "IQ2_XXS": "IQ4_NL", "IQ2_XS": "IQ4_NL",
            "IQ2_S": "IQ4_NL", "IQ3_XXS": "IQ4_NL", "IQ3_S": "IQ4_NL", "TQ1_0": "Q4_0", "TQ2_0": "Q4_0"}
QK_K = 256
# the 1- and 2-bit i-quants share one branch of the rules
IQ_LOW = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")
# attn_output of an 8-expert model goes to Q5_K for these
MOE8_ATTN_OUT_Q5 = ("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S",
                    "IQ3_M", "IQ4_XS")


def use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(ftype: str, role: str, layer: int | None, n_layers: int, cols: int, *, n_gqa: int = 1,
                n_experts: int = 0, is_70b: bool = False) -> str:
    """GGML type name for one tensor (role in GGUF naming, cols = row length)."""
    t = DEFAULT[ftype]
    i = layer or 0
    if role == "norm" or role == "ffn_gate_inp":
        return "F32"                       # 1-D tensors and the MoE router are never quantized
    if role in KEPT_AS_CONVERTED:
        return converted_type()
    if role == "per_layer_token_embd":     # llama-quant.cpp: in the token-embedding category
        role = "token_embd"
    if role == "output":          # also token_embd of a model with tied embeddings (no output.weight)
        if cols % QK_K:
            return "Q8_0"
        return "Q5_K" if ftype in IQ_LOW else ("Q6_K" if t != "Q8_0" else "Q8_0")
    if role == "token_embd":
        t = _token_embd(ftype, t)
    elif ftype in IQ_LOW:
        t = _low_iq(ftype, t, role, i, n_layers, n_gqa, n_experts)
    elif role == "attn_v":
        t = _attn_v(ftype, t, i, n_layers, n_gqa, n_experts, is_70b)
    elif role == "attn_k":
        t = "Q8_0" if n_experts == 8 else {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(ftype, t)
    elif role == "attn_q":
        t = {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(ftype, t)
    elif role in ("ffn_down", "ffn_down_exps"):
        t = _ffn_down(ftype, t, i, n_layers, n_experts)
    elif role == "attn_output":
        if n_experts == 8:
            t = "Q5_K" if ftype in MOE8_ATTN_OUT_Q5 else t
        else:
            t = {"Q2_K": "Q3_K", "IQ3_XXS": "IQ3_S", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K", "IQ3_M": "Q4_K"}.get(ftype, t)
    elif role in ("ffn_gate", "ffn_up", "ffn_gate_exps", "ffn_up_exps"):
        if ftype == "IQ3_XS" and n_layers // 8 <= i < 7 * n_layers // 8:
            t = "IQ3_XXS"
    if cols % QK_K and t in FALLBACK:
        t = FALLBACK[t]
    return t


def _token_embd(ftype: str, t: str) -> str:
    if ftype in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
        return "Q2_K"
    if ftype in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
        return "IQ3_S"
    if ftype in ("TQ1_0", "TQ2_0"):
        return "Q4_K"
    return t


def _low_iq(ftype, t, role, i, n_layers, n_gqa, n_experts) -> str:
    """IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M: their own branch of the rules."""
    wide = ftype in ("IQ2_S", "IQ2_M")
    if role == "attn_v":
        return "Q4_K" if n_gqa >= 4 or n_experts >= 4 else ("IQ3_S" if wide else "Q2_K")
    if role == "attn_k" and n_experts == 8:
        return "Q4_K"
    if role in ("ffn_down", "ffn_down_exps") and i < n_layers // 8:
        return "IQ3_S" if wide else "Q2_K"
    if role == "attn_output":
        if n_experts == 8:
            return "Q5_K"
        if ftype in ("IQ1_S", "IQ1_M"):
            return "IQ2_XXS"
        if wide:
            return "IQ3_S"
    return t


def _attn_v(ftype, t, i, n_layers, n_gqa, n_experts, is_70b) -> str:
    if ftype == "Q2_K":
        t = "Q4_K" if n_gqa >= 4 else "Q3_K"
    elif ftype == "Q2_K_S" and n_gqa >= 4:
        t = "Q4_K"
    elif ftype == "IQ3_XXS":
        t = "Q4_K" if n_gqa >= 4 else "IQ3_S"          # without an importance matrix
    elif ftype in ("IQ3_XS", "IQ3_S") and n_gqa >= 4:
        t = "Q4_K"
    elif ftype == "IQ3_M":
        t = "Q4_K"
    elif ftype == "Q3_K_M":
        t = "Q5_K" if i < 2 else "Q4_K"
    elif ftype == "Q3_K_L":
        t = "Q5_K"
    elif ftype in ("IQ4_NL", "IQ4_XS") and n_gqa >= 4:
        t = "Q5_K"
    elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n_layers):
        t = "Q6_K"
    elif ftype == "Q4_K_S" and i < 4:
        t = "Q5_K"
    if is_70b and t in ("Q3_K", "Q4_K"):
        t = "Q5_K"
    return "Q8_0" if n_experts == 8 else t


def _ffn_down(ftype, t, i, n_layers, n_experts) -> str:
    if ftype == "Q2_K":
        return "Q3_K"
    if ftype == "Q2_K_S":
        return "Q4_K" if i < n_layers // 8 else t
    if ftype == "IQ3_XXS":                              # without an importance matrix
        return "Q4_K" if i < n_layers // 8 else "Q3_K"
    if ftype == "Q3_K_M":
        return "Q5_K" if i < n_layers // 16 else "Q4_K"
    if ftype == "IQ3_M":
        return "Q4_K" if i < n_layers // 8 or (n_experts == 8 and use_more_bits(i, n_layers)) else t
    if ftype == "Q3_K_L":
        return "Q5_K"
    if ftype in ("Q4_K_M", "Q5_K_M"):
        return "Q6_K" if use_more_bits(i, n_layers) else t
    if ftype in ("IQ4_NL", "IQ4_XS") and i < n_layers // 8:
        return "Q5_K"
    if ftype == "Q4_K_S" and i < n_layers // 8:
        return "Q5_K"
    return t
