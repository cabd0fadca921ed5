"""The JSON types of the config.json fields the readers (``hf_config``) take as counts, numbers and flags.

The readers convert what they read with ``int()``, ``float()`` and ``bool()``, which take far more than a
config means: ``int("32")``, ``int(True)`` and ``int(32.9)`` are 32, 1 and 32; ``bool("false")`` is True, so a
``"tie_word_embeddings": "false"`` would tie the embeddings and ``"attention_bias": "no"`` add biases, without a
word. Every field a reader takes as one of these is checked here first, by its JSON type, and a value of another
type is one clear error naming the field (``check``): a count is a whole number >= 0 (an integral float such as
4096.0 passes), a number a finite one, a flag ``true`` or ``false`` (or 0 / 1); ``null`` counts as absent, as the
readers take it, and a list is the reader's (a per-layer value it takes or refuses as unmodelled). Fields read as lists or words (``layer_types``, ``intermediate_size`` per layer, ``model_type``) are the
readers' own, and the shape fields ``ModelSpec`` checks itself (``n_layers`` ...) are checked there too.
"""

from __future__ import annotations

from ..errors import UserError
from ..guard.typed import count, number

COUNTS = frozenset("""
num_hidden_layers n_layer num_layers hidden_size n_embd d_model num_attention_heads n_head vocab_size
padded_vocab_size n_inner ffn_hidden_size num_key_value_heads n_head_kv head_dim max_position_embeddings
n_positions seq_length sliding_window num_local_experts num_experts n_routed_experts num_experts_per_tok
experts_per_token moe_intermediate_size max_window_layers decoder_sparse_step shared_expert_intermediate_size
sliding_window_pattern global_head_dim num_global_key_value_heads top_k_experts expert_intermediate_size rotary_dim
n_shared_experts first_k_dense_replace moe_layer_freq index_topk index_n_heads index_head_dim full_attention_interval
linear_num_key_heads linear_key_head_dim linear_num_value_heads linear_value_head_dim linear_conv_kernel_dim
mamba_n_groups mamba_d_state mamba_n_heads mamba_d_head mamba_d_conv shared_intermediate_size attention_chunk_size
interleave_moe_layer_step intermediate_size_mlp kv_lora_rank q_lora_rank qk_rope_head_dim qk_nope_head_dim v_head_dim
hidden_size_per_layer_input num_kv_shared_layers vocab_size_per_layer_input altup_num_inputs laurel_rank
""".split())
# a ``vision_config``'s, as the vision-tower readers take them (besides hidden_size, intermediate_size ...)
VISION_COUNTS = COUNTS | frozenset("""
intermediate_size patch_size image_size num_channels projector_input_dim projector_output_dim vision_output_dim
depth temporal_patch_size in_channels spatial_merge_size out_hidden_size num_position_embeddings
""".split())
NUMBERS = frozenset({"rope_theta", "partial_rotary_factor"})
FLAGS = frozenset("""
tie_word_embeddings attention_bias mlp_bias attention_k_eq_v use_qk_norm attention_out_bias use_sliding_window
enable_moe_block mamba_proj_bias mamba_conv_bias use_double_wide_mlp
""".split())


def _what(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check(cfg: dict, where: str, counts: frozenset = COUNTS) -> None:
    """UserError for the first field of ``cfg`` (a config; its vision part with ``VISION_COUNTS``) whose value is
    not of its JSON type (the module docstring); nested ``rope_parameters`` (and their per-layer-type parts)
    included."""
    for name, v in cfg.items():
        if v is None or not isinstance(name, str):
            continue
        if isinstance(v, (list, dict)) and name != "rope_parameters" and name not in ("full_attention",
                                                                                         "sliding_attention"):
            continue        # a per-layer list (MiniMax's moe_layer_freq) is the reader's to take or refuse
        if name in counts and count(v) is None:
            raise UserError(f"{where}: field {name!r} should be a whole number >= 0, got {_what(v)}")
        if name in NUMBERS and number(v) is None:
            raise UserError(f"{where}: field {name!r} should be a finite number, got {_what(v)}")
        if name in FLAGS and not (isinstance(v, bool) or (type(v) is int and v in (0, 1))):
            raise UserError(f"{where}: field {name!r} should be true or false, got {_what(v)}")
        if name == "rope_parameters" and isinstance(v, dict):
            check(v, f"{where} rope_parameters")
        if name in ("full_attention", "sliding_attention") and isinstance(v, dict):
            check(v, f"{where} {name}")
