"""WeightStorage: how many bytes each weight tensor of a model occupies.

The operator ledger never assumes a bits-per-weight number: it asks a WeightStorage for the bytes
of each tensor by its *role* (llama.cpp's GGUF tensor names, without the ``blk.N.`` prefix and the
``.weight`` suffix) and its layer. A quant scheme (``--quant Q4_K_M``) answers from the format's
block sizes and the llama.cpp mix rules; a real file (GGUF/safetensors) answers with the exact bytes
of the tensors it holds.
"""

from __future__ import annotations

from typing import Protocol

# Roles, in GGUF naming. Expert stacks (``*_exps``) hold all experts of a layer.
ROLES = (
    "token_embd", "output",
    "attn_q", "attn_k", "attn_v", "attn_output",            # standard attention
    "attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_kv_b",    # MLA (DeepSeek)
    "ffn_gate", "ffn_up", "ffn_down",                        # dense FFN
    "ffn_gate_inp",                                          # MoE router
    "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps",         # routed experts (all of a layer)
    "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",      # shared experts
    "norm",                                                  # every norm / bias vector (small, kept F32)
) + ("per_layer_token_embd", "per_layer_model_proj", "inp_gate", "proj",   # Gemma 3n: per-layer inputs,
     "altup_proj", "altup_unembd_proj", "altup_router", "altup_predict_coef", "altup_correct_coef",  # AltUp,
     "laurel_l", "laurel_r")                                                 # LAuReL (models/tensors.py)

# Tensors llama.cpp's quantizer leaves at the converted type (src/llama-quant.cpp tensor_allows_quantization:
# names containing "altup" or "laurel" -- "very small" -- and per_layer_model_proj -- "not too big"):
# convert_hf_to_gguf.py writes matrices at its --outtype, F16 by default (2 bytes, as BF16)
KEPT_AS_CONVERTED = ("per_layer_model_proj", "altup_proj", "altup_unembd_proj", "altup_router", "altup_predict_coef",
                     "altup_correct_coef", "laurel_l", "laurel_r")


class WeightStorage(Protocol):
    name: str

    def tensor_bytes(self, role: str, layer: int | None, rows: int, cols: int) -> float:
        """Bytes of the weight tensor ``role`` in ``layer`` (None for token_embd/output/final norm),
        shaped ``rows x cols`` where ``cols`` is the input (contiguous, row) dimension."""
        ...

    def element_bytes(self, role: str, layer: int | None) -> float:
        """Average bytes per element of that tensor (for one row of the embedding, for instance)."""
        ...
