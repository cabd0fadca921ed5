"""Config fields that change a token's bytes or FLOPs in a way only a family reader can model: a config.json of a
``model_type`` without such a reader that carries one is refused, naming the field (``tokspeed.models.hf_config``;
the list is in docs/models.md)."""

from __future__ import annotations

from ..errors import UserError

# Fields that change a token's bytes or FLOPs in ways a reader must model. A config that carries one
# and whose model_type has no reader for it is refused, naming the field (never read as Llama).
COST_FIELDS = {
    "hybrid_override_pattern": "per-layer Mamba / attention / MLP-only blocks (Nemotron-H)",
    "layers_block_type": "state-space (Mamba) layers between attention layers",
    "attn_layer_period": "Mamba-1 layers between attention layers (Jamba)",
    "mamba_d_state": "Mamba state-space layers",
    "ssm_state_size": "state-space layers",
    "linear_num_key_heads": "linear-attention layers",
    "full_attention_interval": "linear-attention layers between full-attention layers",
    "attention_chunk_size": "chunked attention",
    "index_topk": "sparse attention with an indexer (DeepSeek V3.2 DSA)",
    "kv_lora_rank": "multi-head latent attention",
    "first_k_dense_replace": "dense leading layers in an MoE model",
    "n_shared_experts": "shared experts",
    "shared_expert_intermediate_size": "a shared expert",
    "interleave_moe_layer_step": "MoE on every n-th layer",
    "expert_layer_period": "MoE on every n-th layer",
    "moe_layer_freq": "MoE on every n-th layer",
    "block_sparse_moe": "MoE",
    "global_head_dim": "full-attention layers with their own head width (Gemma 4)",
    "num_global_key_value_heads": "full-attention layers with their own KV-head count (Gemma 4)",
    "attention_k_eq_v": "keys reused as values (Gemma 4)",
    "swa_num_key_value_heads": "sliding-window layers with their own KV-head count (MiMo-V2)",
    "compress_ratios": "compressed KV attention (DeepSeek V4)",
    "o_lora_rank": "a grouped low-rank output projection (DeepSeek V4)",
    "sparse_attention_config": "block-sparse attention with an indexer (MiniMax M3)",
    "linear_attn_config": "Kimi Delta Attention linear layers (Kimi Linear / K3)",
    "moe_latent_size": "experts in a latent space (Nemotron 3 LatentMoE)",
    "block_configs": "per-layer heterogeneous blocks (Nemotron NAS)",
    "hidden_size_per_layer_input": "per-layer input embeddings (Gemma 3n)",
    "altup_num_inputs": "AltUp's parallel hidden streams (Gemma 3n)",
}


def refuse_unmodelled(cfg: dict, model_type: str) -> None:
    """Raise UserError naming the first cost field ``cfg`` carries, or a ``layer_types`` kind other than full or
    sliding attention; run before the standard fields are read, so a config is refused for what it is."""
    for f, what in COST_FIELDS.items():
        if cfg.get(f) not in (None, 0, False, [], ""):
            raise UserError(f"model_type {model_type!r} with {f} ({what}) is not modelled",
                            "tokspeed refuses rather than guess; see docs/models.md for the architectures it reads")
    types = {str(t) for t in cfg.get("layer_types") or []}
    other = sorted(t for t in types if t not in ("full_attention", "sliding_attention", "attention"))
    if other:
        raise UserError(f"model_type {model_type!r}: layer_types {', '.join(other)} are not modelled",
                        "tokspeed refuses rather than guess")
