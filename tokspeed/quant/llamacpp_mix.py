"""Which GGML type llama.cpp's ``llama-quantize`` gives each tensor for a mixed ftype (Q4_K_M ...).

A transcription of ``llama_tensor_get_type`` in llama.cpp ``src/llama-quant.cpp`` for the ftypes
tokspeed names, restricted to the decoder roles it models. ``use_more_bits`` and the fallbacks for rows
whose length is not a multiple of 256 follow that file.
"""

from __future__ import annotations

# ftype -> default type of a 2-D weight
DEFAULT = {
    "Q2_K": "Q2_K", "Q3_K_M": "Q3_K", "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K",
    "Q5_K_M": "Q5_K", "Q6_K": "Q6_K", "Q8_0": "Q8_0", "Q4_0": "Q4_0", "Q4_1": "Q4_1",
    "Q5_0": "Q5_0", "Q5_1": "Q5_1", "IQ4_XS": "IQ4_XS", "IQ4_NL": "IQ4_NL",
}

# k-quant types need rows that are a multiple of 256; otherwise llama.cpp falls back.
FALLBACK = {"Q2_K": "IQ4_NL", "Q3_K": "IQ4_NL", "IQ4_XS": "IQ4_NL", "Q4_K": "Q5_0", "Q5_K": "Q5_1",
            "Q6_K": "Q8_0"}
QK_K = 256


def use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(ftype: str, role: str, layer: int | None, n_layers: int, cols: int, *, n_gqa: int = 1,
                n_experts: int = 0, is_70b: bool = False) -> str:
    """GGML type name for one tensor (role in GGUF naming, cols = row length)."""
    t = DEFAULT[ftype]
    i = layer or 0
    if role == "norm" or role == "ffn_gate_inp":
        return "F32"                       # 1-D tensors and the MoE router are never quantized
    if role == "output":          # also token_embd of a model with tied embeddings (no output.weight)
        t = "Q8_0" if cols % QK_K else ("Q6_K" if t != "Q8_0" else "Q8_0")
        return t
    if role == "attn_v":
        if ftype == "Q2_K":
            t = "Q4_K" if n_gqa >= 4 else "Q3_K"
        elif ftype == "Q3_K_M":
            t = "Q5_K" if i < 2 else "Q4_K"
        elif ftype in ("IQ4_NL", "IQ4_XS") and n_gqa >= 4:
            t = "Q5_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n_layers):
            t = "Q6_K"
        elif ftype == "Q4_K_S" and i < 4:
            t = "Q5_K"
        if is_70b and t in ("Q3_K", "Q4_K"):
            t = "Q5_K"
        if n_experts == 8:
            t = "Q8_0"
    elif role == "attn_k" and n_experts == 8:
        t = "Q8_0"
    elif role in ("ffn_down", "ffn_down_exps"):
        if ftype == "Q2_K":
            t = "Q3_K"
        elif ftype == "Q3_K_M":
            t = "Q5_K" if i < n_layers // 16 else "Q4_K"
        elif ftype in ("IQ4_NL", "IQ4_XS") and i < n_layers // 8:
            t = "Q5_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n_layers):
            t = "Q6_K"
        elif ftype == "Q4_K_S" and i < n_layers // 8:
            t = "Q5_K"
    elif role == "attn_output":
        if n_experts == 8:
            if ftype in ("Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M", "IQ4_NL", "IQ4_XS"):
                t = "Q5_K"
        elif ftype == "Q2_K":
            t = "Q3_K"
        elif ftype == "Q3_K_M":
            t = "Q4_K"
    if cols % QK_K and t in FALLBACK:
        t = FALLBACK[t]
    return t
