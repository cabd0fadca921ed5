"""Reading a Hugging Face ``config.json`` (file or folder) into a ModelSpec.

Each ``model_type`` names its fields its own way (GPT-J's ``n_embd``, Mixtral's ``num_local_experts``,
DeepSeek's ``first_k_dense_replace``) and leaves some out, relying on the defaults of its
``transformers`` config class. ``_FAMILIES`` maps a model_type to (defaults, reader): the defaults are
those of the transformers class for the fields real configs omit, the reader sets what the family's
architecture fixes (biases, norms, MoE layout). An unknown model_type is read with the standard
Llama-style field names.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UserError
from ..guard.typed import count
from ..userfile import read_json_object, read_toml
from .config_types import VISION_COUNTS
from .config_types import check as check_types
from .spec import ModelSpec
from .unmodelled import refuse_unmodelled as _refuse_unmodelled


def spec_from_path(path) -> ModelSpec:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"

    if p.suffix == ".toml":
        p, raw = read_toml(p, "model file")
        raw.pop("aliases", None)
        raw.setdefault("id", p.stem)
        return ModelSpec.from_dict(raw)
    p, cfg = read_json_object(p, "model file")
    return spec_from_hf_config(cfg, id=config_title(p, cfg), where=str(p))


# folder names that say where a config is kept, not which model it is ("configs/config.json")
GENERIC_FOLDERS = frozenset("config configs model models checkpoint checkpoints weights hf files data tmp temp "
                            "downloads download snapshots main".split())


def config_title(path, cfg: dict) -> str:
    """What a config file is called: its folder's name for a ``config.json`` (a Hugging Face folder), its own stem
    for another name ("qwen3-8b.json"), unless that is a generic word ("configs", "models") or an HF snapshot hash;
    then the config's ``_name_or_path`` (its last part), its first ``architectures`` entry, or ``model_type``."""
    p = Path(path)
    name = p.parent.name if p.name == "config.json" else p.stem
    if name and name.lower() not in GENERIC_FOLDERS and not re.fullmatch(r"[0-9a-f]{40}", name):
        return name
    for key in ("_name_or_path", "architectures", "model_type"):
        v = cfg.get(key)
        v = v[0] if isinstance(v, list) and v else v
        if isinstance(v, str) and v.strip():
            return v.strip().rstrip("/").rsplit("/", 1)[-1]
    return name or "model"


# ---- the standard fields --------------------------------------------------------------------

# ModelSpec field -> config names tried in order (first present and not null wins).
_NAMES = {
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "n_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "d_ff": ("intermediate_size", "n_inner", "ffn_hidden_size"),
}


def _get(cfg: dict, *names, default=None):
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def _sliding_layers_from_types(cfg: dict) -> int:
    """Count of ``layer_types`` entries that are sliding-window attention (gpt-oss, newer Gemma/Qwen)."""
    return sum(1 for t in cfg.get("layer_types") or [] if "sliding" in str(t))


def _standard(cfg: dict, need_ff: bool = True) -> dict:
    kw, missing = {}, []
    for key, names in _NAMES.items():
        v = _get(cfg, *names)
        if v is None:
            if key != "d_ff" or need_ff:
                missing.append(names[0])
            continue
        kw[key] = v
    if missing:
        raise UserError(f"lacks {', '.join(missing)} (model_type {cfg.get('model_type', '?')!r})",
                        "a decoder config.json needs these fields")
    kw["n_kv_heads"] = _get(cfg, "num_key_value_heads", "n_head_kv", default=kw["n_heads"])
    kw["head_dim"] = _get(cfg, "head_dim", default=0)
    kw["tied_embeddings"] = bool(cfg.get("tie_word_embeddings", True))  # PretrainedConfig default
    rope = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    # transformers 5 configs nest it: "rope_parameters": {"rope_theta": ...} (GLM-5's config)
    kw["rope_theta"] = float(_get(cfg, "rope_theta", default=rope.get("rope_theta", 10000.0)))
    kw["max_context"] = int(_get(cfg, "max_position_embeddings", "n_positions", "seq_length", default=4096))
    kw["qkv_bias"] = bool(cfg.get("attention_bias", False))
    kw["o_bias"] = bool(cfg.get("attention_bias", False))
    kw["mlp_bias"] = bool(cfg.get("mlp_bias", False))
    n_sliding = _sliding_layers_from_types(cfg)
    if n_sliding and cfg.get("sliding_window"):
        kw["sliding_window"] = int(cfg["sliding_window"])
        kw["n_sliding_layers"] = n_sliding
    return kw


def _moe_generic(cfg: dict, kw: dict) -> None:
    """Routed experts under the common names, if the config has them."""
    n = _get(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0)
    if not n:
        return
    kw["n_experts"] = int(n)
    kw["n_active_experts"] = int(_get(cfg, "num_experts_per_tok", "experts_per_token", default=0))
    kw["d_ff_expert"] = int(_get(cfg, "moe_intermediate_size", default=kw.get("d_ff", 0)))
    if cfg.get("moe_intermediate_size") is None:   # Mixtral style: intermediate_size is the expert width
        kw["d_ff"] = 0


def _all_sliding(cfg: dict, kw: dict) -> None:
    """Mistral / Mixtral / Phi-3: a non-null sliding_window applies to every layer."""
    if cfg.get("sliding_window") and not cfg.get("layer_types"):
        kw["sliding_window"] = int(cfg["sliding_window"])
        kw["n_sliding_layers"] = kw["n_layers"]


# ---- families -------------------------------------------------------------------------------

def _llama(cfg, kw):
    pass


def _mistral(cfg, kw):
    _all_sliding(cfg, kw)


def _mixtral(cfg, kw):
    _moe_generic(cfg, kw)
    _all_sliding(cfg, kw)


def _qwen_sliding(cfg, kw):
    """transformers Qwen2/3: with use_sliding_window, layers from max_window_layers on use the window."""
    if cfg.get("use_sliding_window") and cfg.get("sliding_window") and not kw.get("n_sliding_layers"):
        n = max(0, kw["n_layers"] - int(cfg.get("max_window_layers", kw["n_layers"])))
        if n:
            kw["sliding_window"] = int(cfg["sliding_window"])
            kw["n_sliding_layers"] = n


def _qwen2(cfg, kw):
    kw["qkv_bias"], kw["o_bias"] = True, False
    _qwen_sliding(cfg, kw)


def _qwen_moe_layers(cfg, kw):
    """Qwen2/3-MoE: a layer is MoE unless listed in mlp_only_layers or skipped by decoder_sparse_step."""
    step = int(cfg.get("decoder_sparse_step", 1) or 1)
    only_mlp = set(cfg.get("mlp_only_layers") or [])
    L = kw["n_layers"]
    n_moe = sum(1 for i in range(L) if i not in only_mlp and (i + 1) % step == 0)
    kw["n_dense_layers"] = L - n_moe
    if not kw["n_dense_layers"]:
        kw["d_ff"] = 0


def _qwen2_moe(cfg, kw):
    _qwen2(cfg, kw)
    _moe_generic(cfg, kw)
    shared = int(cfg.get("shared_expert_intermediate_size", 0) or 0)
    if shared:
        kw["n_shared_experts"] = 1
        kw["d_ff_shared"] = shared
        kw["shared_expert_gate"] = True
    _qwen_moe_layers(cfg, kw)


def _qwen3(cfg, kw):
    kw["qk_norm"] = True
    _qwen_sliding(cfg, kw)


def _qwen3_moe(cfg, kw):
    _qwen3(cfg, kw)
    _moe_generic(cfg, kw)
    _qwen_moe_layers(cfg, kw)


def _gemma_common(cfg, kw):
    kw["norms_per_layer"] = 4          # input, post-attention, pre-FFN, post-FFN RMSNorms
    kw["qkv_bias"] = kw["o_bias"] = bool(cfg.get("attention_bias", False))


def _gemma2(cfg, kw):
    _gemma_common(cfg, kw)
    if not kw.get("n_sliding_layers") and cfg.get("sliding_window"):
        # transformers Gemma2: even-indexed layers use the window
        kw["sliding_window"] = int(cfg["sliding_window"])
        kw["n_sliding_layers"] = (kw["n_layers"] + 1) // 2


def _gemma3_text(cfg, kw):
    _gemma_common(cfg, kw)
    kw["qk_norm"] = True
    if not kw.get("n_sliding_layers") and cfg.get("sliding_window"):
        # transformers Gemma3: layer i is global when (i + 1) % sliding_window_pattern == 0
        pattern = int(cfg.get("sliding_window_pattern", 6))
        kw["sliding_window"] = int(cfg["sliding_window"])
        kw["n_sliding_layers"] = kw["n_layers"] - kw["n_layers"] // pattern


def _gemma3n_text(cfg, kw):
    """Gemma 3n (transformers Gemma3nTextConfig): Gemma 3's layers plus per-layer inputs, AltUp copies, a LAuReL
    residual, caches shared by the last layers, sparse FFN gates (docs/models.md, "Gemma 3n"); one FFN width
    (a per-layer ``intermediate_size`` of several, MatFormer, is refused)."""
    _gemma_common(cfg, kw)
    kw["qk_norm"] = True
    ff = kw.get("d_ff")
    if isinstance(ff, list):
        widths = {count(v) for v in ff}
        if None in widths or 0 in widths:
            raise UserError("gemma3n: intermediate_size should be a whole number or a list of them, one per layer")
        if len(widths) != 1 or len(ff) != kw["n_layers"]:
            raise UserError(f"gemma3n with per-layer intermediate_size {sorted(widths)[:4]} (MatFormer layers of "
                            "several widths) is not modelled")
        kw["d_ff"] = widths.pop()
    if not kw.get("n_sliding_layers") and cfg.get("sliding_window"):
        # transformers Gemma3nTextConfig without layer_types: layer i is full attention when i % 5 == 0
        kw["sliding_window"] = int(cfg["sliding_window"])
        kw["n_sliding_layers"] = kw["n_layers"] - (kw["n_layers"] + 4) // 5
    sparsity = cfg.get("activation_sparsity_pattern") or []
    if not isinstance(sparsity, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in sparsity):
        raise UserError("gemma3n: activation_sparsity_pattern should be a list of numbers")
    missing = [f for f in ("hidden_size_per_layer_input", "vocab_size_per_layer_input", "altup_num_inputs",
                           "laurel_rank") if cfg.get(f) is None]
    if missing:
        raise UserError(f"gemma3n lacks {', '.join(missing)}", "a Gemma 3n config.json states these")
    kw.update(ple_dim=int(cfg["hidden_size_per_layer_input"]), ple_vocab=int(cfg["vocab_size_per_layer_input"]),
              altup_inputs=int(cfg["altup_num_inputs"]), laurel_rank=int(cfg["laurel_rank"]),
              kv_shared_layers=int(cfg.get("num_kv_shared_layers") or 0),
              sparse_ffn_layers=sum(1 for v in sparsity if v))


def _gemma4_text(cfg, kw):
    """Gemma 4: Gemma 3's layers, with full-attention layers of their own head shape (``global_head_dim``,
    ``num_global_key_value_heads``, ``attention_k_eq_v``); with ``enable_moe_block`` every layer runs an MoE
    block next to its dense MLP (entered as an always-on shared expert of ``intermediate_size``)."""
    for f, what in (("hidden_size_per_layer_input", "per-layer input embeddings (Gemma 4 E2B/E4B)"),
                    ("num_kv_shared_layers", "layers sharing another layer's KV cache"),
                    ("use_double_wide_mlp", "double-wide MLP layers")):
        if cfg.get(f):
            raise UserError(f"gemma4 with {f} ({what}) is not modelled")
    _gemma3_text(cfg, kw)
    full = (cfg.get("rope_parameters") or {}).get("full_attention") or {}
    kw["rope_theta"] = float(full.get("rope_theta", kw["rope_theta"]))
    kw["global_head_dim"] = int(cfg.get("global_head_dim") or 0)
    kw["global_kv_heads"] = int(cfg.get("num_global_key_value_heads") or 0)
    kw["global_kv_shared"] = bool(cfg.get("attention_k_eq_v", False))
    if cfg.get("enable_moe_block"):
        kw.update(n_experts=int(cfg["num_experts"]), n_active_experts=int(cfg["top_k_experts"]),
                  d_ff_expert=int(_get(cfg, "moe_intermediate_size", "expert_intermediate_size")),
                  n_shared_experts=1, d_ff_shared=kw["d_ff"], d_ff=0)


def _phi3(cfg, kw):
    _all_sliding(cfg, kw)
    factor = float(_get(cfg, "partial_rotary_factor", default=1.0))
    head_dim = kw["head_dim"] or kw["d_model"] // kw["n_heads"]
    if factor < 1.0:
        kw["rotary_dim"] = int(head_dim * factor)


def _phi(cfg, kw):
    """Phi-1/1.5/2: parallel block on one LayerNorm, GELU MLP, biases on every linear."""
    kw.update(gated_mlp=False, norm="layernorm", norms_per_layer=1, parallel_block=True,
              qkv_bias=True, o_bias=True, mlp_bias=True, lm_head_bias=True)
    head_dim = kw["head_dim"] or kw["d_model"] // kw["n_heads"]
    kw["rotary_dim"] = int(head_dim * float(_get(cfg, "partial_rotary_factor", default=0.5)))


def _gptj(cfg, kw):
    """GPT-J: parallel block on one LayerNorm, no attention biases, GELU MLP with biases, lm_head bias."""
    kw.update(gated_mlp=False, norm="layernorm", norms_per_layer=1, parallel_block=True,
              qkv_bias=False, o_bias=False, mlp_bias=True, lm_head_bias=True)
    kw["d_ff"] = int(cfg.get("n_inner") or 4 * kw["d_model"])
    kw["rotary_dim"] = int(cfg.get("rotary_dim") or 0)


def _deepseek_v3(cfg, kw):
    _moe_generic(cfg, kw)
    kw["n_shared_experts"] = int(cfg.get("n_shared_experts") or 0)
    kw["n_dense_layers"] = int(cfg.get("first_k_dense_replace", 0))
    kw["router_bias"] = cfg.get("topk_method", "noaux_tc") == "noaux_tc"   # e_score_correction_bias
    for f in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        kw[f] = int(cfg.get(f) or 0)
    kw["head_dim"] = kw["qk_nope_head_dim"] + kw["qk_rope_head_dim"]
    kw["rotary_dim"] = kw["qk_rope_head_dim"]


def _deepseek_v2(cfg, kw):
    """DeepSeek-V2 (and V2-Lite): the V3 layout; ``moe_layer_freq`` other than 1 is not modelled."""
    if int(cfg.get("moe_layer_freq", 1) or 1) != 1:
        raise UserError(f"deepseek_v2 with moe_layer_freq {cfg.get('moe_layer_freq')} (MoE on every n-th layer) is not modelled")
    _deepseek_v3(cfg, kw)


def _sparse_indexed(cfg, kw):
    """DeepSeek-V3.2 (``deepseek_v32``) and GLM-5 (``glm_moe_dsa``): the DeepSeek-V3 layout plus DeepSeek Sparse
    Attention's lightning indexer (``index_topk``, ``index_n_heads``, ``index_head_dim``). Layers that reuse
    another layer's indexer (GLM-5.2 ``indexer_types`` "shared") are refused."""
    shared = sorted({str(t) for t in cfg.get("indexer_types") or []} - {"full"})
    if shared:
        raise UserError(f"indexer_types {', '.join(shared)} (layers reusing another layer's indexer) is not modelled")
    missing = [f for f in ("index_topk", "index_n_heads", "index_head_dim") if not cfg.get(f)]
    if missing:
        raise UserError(f"lacks {', '.join(missing)} (model_type {cfg.get('model_type', '?')!r})",
                        "a sparse-attention config names its indexer's top-k, heads and head width")
    _deepseek_v3(cfg, kw)
    kw.update(index_topk=int(cfg["index_topk"]), index_n_heads=int(cfg["index_n_heads"]),
              index_head_dim=int(cfg["index_head_dim"]))


def _glm4_moe(cfg, kw):
    """GLM-4.5: routed + shared experts after ``first_k_dense_replace`` dense layers, bias on q/k/v only,
    QK-norm with ``use_qk_norm``."""
    _moe_generic(cfg, kw)
    kw["n_shared_experts"] = int(cfg.get("n_shared_experts") or 0)
    kw["n_dense_layers"] = int(cfg.get("first_k_dense_replace", 0))
    kw["qkv_bias"], kw["o_bias"] = bool(cfg.get("attention_bias", False)), False
    kw["qk_norm"] = bool(cfg.get("use_qk_norm", False))
    kw["router_bias"] = cfg.get("topk_method", "noaux_tc") == "noaux_tc"


def _olmo2(cfg, kw):
    """OLMo 2: norms after attention and MLP, QK-norm (over the whole q/k width in OLMo; counted per head)."""
    kw["qk_norm"] = True


def _gpt_oss(cfg, kw):
    _moe_generic(cfg, kw)
    kw["d_ff"] = 0
    kw.update(attn_sinks=True, router_bias=True, expert_bias=True)
    if not cfg.get("layer_types") and cfg.get("sliding_window"):
        # transformers GptOssConfig default: even-indexed layers slide, odd ones attend fully
        kw["sliding_window"] = int(cfg["sliding_window"])
        kw["n_sliding_layers"] = (kw["n_layers"] + 1) // 2


def _qwen3_next(cfg, kw):
    """Qwen3-Next: Gated DeltaNet layers with a fixed state, every ``full_attention_interval``-th layer
    gated full attention (q_proj also emits the output gate), partial rotary, gated shared expert."""
    _qwen2_moe(cfg, kw)
    kw["qkv_bias"] = bool(cfg.get("attention_bias", False))
    kw.update(qk_norm=True, attn_output_gate=True)
    head_dim = kw["head_dim"] or kw["d_model"] // kw["n_heads"]
    kw["rotary_dim"] = int(head_dim * float(_get(cfg, "partial_rotary_factor", default=0.25)))
    L = kw["n_layers"]
    types = cfg.get("layer_types")
    if types:
        kw["n_linear_layers"] = sum(1 for t in types if t == "linear_attention")
    else:
        kw["n_linear_layers"] = L - L // int(cfg.get("full_attention_interval", 4))
    kw.update(linear_kind="gated_deltanet", linear_k_heads=int(cfg["linear_num_key_heads"]),
              linear_k_dim=int(cfg["linear_key_head_dim"]), linear_v_heads=int(cfg["linear_num_value_heads"]),
              linear_v_dim=int(cfg["linear_value_head_dim"]), linear_conv_kernel=int(cfg["linear_conv_kernel_dim"]))


def _qwen3_5(cfg, kw):
    """Qwen3.5 / Qwen3.6 (dense and MoE): Qwen3-Next's hybrid layout (Gated DeltaNet layers, every
    ``full_attention_interval``-th layer gated attention) with a dense FFN or routed + gated shared experts."""
    dense_ff = 0 if cfg.get("num_experts") else kw.get("d_ff", 0)
    _qwen3_next(cfg, kw)
    if dense_ff:
        kw.update(d_ff=dense_ff, n_dense_layers=0)


def _qwen3_vl(cfg, kw):
    _qwen3(cfg, kw)


def _seed_oss(cfg, kw):
    """Seed-OSS: bias on q/k/v (attention_bias) and, separately, on o (attention_out_bias)."""
    kw["qkv_bias"], kw["o_bias"] = bool(cfg.get("attention_bias", False)), bool(cfg.get("attention_out_bias", False))


def _granitemoehybrid(cfg, kw):
    """Granite 4.0-H: Mamba-2 layers (``layer_types`` "mamba") and attention layers, each followed by a
    shared gated MLP (``shared_intermediate_size``) and, with ``num_local_experts``, routed experts."""
    types = cfg.get("layer_types") or cfg.get("layers_block_type")
    if not types:
        raise UserError("granitemoehybrid config lacks layer_types", "cannot tell the Mamba layers from attention")
    kw["n_linear_layers"] = sum(1 for t in types if t == "mamba")
    kw.update(linear_kind="mamba2", linear_k_heads=int(cfg.get("mamba_n_groups", 1)),
              linear_k_dim=int(cfg.get("mamba_d_state", 128)), linear_v_heads=int(cfg["mamba_n_heads"]),
              linear_v_dim=int(cfg.get("mamba_d_head", 64)), linear_conv_kernel=int(cfg.get("mamba_d_conv", 4)))
    if cfg.get("mamba_proj_bias") or cfg.get("mamba_conv_bias") is False:
        raise UserError("granitemoehybrid: mamba_proj_bias / mamba_conv_bias other than the defaults are not modelled")
    shared = int(cfg.get("shared_intermediate_size") or 0)
    experts = int(cfg.get("num_local_experts") or 0)
    if experts:
        kw.update(n_experts=experts, n_active_experts=int(cfg["num_experts_per_tok"]),
                  d_ff_expert=int(cfg["intermediate_size"]), d_ff=0)
        if shared:
            kw.update(n_shared_experts=1, d_ff_shared=shared)
    else:
        kw["d_ff"] = shared or kw.get("d_ff", 0)


def _llama4(cfg, kw):
    """Llama 4: chunked RoPE layers (``attention_chunk_size``) and global NoPE layers (``no_rope_layers``
    0), MoE on ``moe_layers`` (every ``interleave_moe_layer_step``-th) with one shared expert, dense
    ``intermediate_size_mlp`` elsewhere; use_qk_norm is a weightless L2 norm."""
    L = kw["n_layers"]
    rope_layers = cfg.get("no_rope_layers")
    n_chunked = sum(1 for x in rope_layers if x) if rope_layers else L - L // 4
    chunk = int(cfg.get("attention_chunk_size") or 0)
    if chunk and n_chunked:
        kw.update(sliding_window=chunk, n_sliding_layers=n_chunked, chunked_attention=True)
    step = int(cfg.get("interleave_moe_layer_step", 1) or 1)
    moe_layers = cfg.get("moe_layers")
    if not (isinstance(moe_layers, list) and all(isinstance(i, int) for i in moe_layers)):
        moe_layers = list(range(step - 1, L, step))     # transformers Llama4TextConfig's default
    kw.update(n_experts=int(cfg.get("num_local_experts", 16)), n_active_experts=int(cfg.get("num_experts_per_tok", 1)),
              d_ff_expert=int(cfg.get("intermediate_size", 8192)), n_shared_experts=1)
    kw["n_dense_layers"] = L - len(moe_layers)
    kw["d_ff"] = int(cfg.get("intermediate_size_mlp", 16384)) if kw["n_dense_layers"] else 0


# model_type -> (defaults of the transformers config class for fields real configs omit, reader)
_FAMILIES = {
    "llama": ({"tie_word_embeddings": False, "max_position_embeddings": 2048}, _llama),
    "mistral": ({"tie_word_embeddings": False, "sliding_window": 4096, "max_position_embeddings": 131072},
                _mistral),
    "mixtral": ({"tie_word_embeddings": False, "num_local_experts": 8, "num_experts_per_tok": 2,
                 "rope_theta": 1e6}, _mixtral),
    "qwen2": ({"tie_word_embeddings": False}, _qwen2),
    "qwen2_moe": ({"tie_word_embeddings": False, "num_experts": 60, "num_experts_per_tok": 4,
                   "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632}, _qwen2_moe),
    "qwen3": ({"tie_word_embeddings": False, "head_dim": 128}, _qwen3),
    "qwen3_moe": ({"tie_word_embeddings": False, "num_experts": 128, "num_experts_per_tok": 8,
                   "moe_intermediate_size": 768}, _qwen3_moe),
    "gemma2": ({"tie_word_embeddings": True, "head_dim": 256, "sliding_window": 4096}, _gemma2),
    "gemma3_text": ({"tie_word_embeddings": True, "vocab_size": 262208, "num_attention_heads": 8,
                     "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
                     "rope_theta": 1e6, "sliding_window": 4096, "sliding_window_pattern": 6}, _gemma3_text),
    "phi3": ({"tie_word_embeddings": False}, _phi3),
    "phi": ({"tie_word_embeddings": False, "partial_rotary_factor": 0.5}, _phi),
    "gptj": ({"tie_word_embeddings": False, "rotary_dim": 64, "n_positions": 2048}, _gptj),
    "deepseek_v3": ({"tie_word_embeddings": False, "moe_intermediate_size": 2048}, _deepseek_v3),
    "gpt_oss": ({"tie_word_embeddings": False}, _gpt_oss),
    "deepseek_v2": ({"tie_word_embeddings": False, "moe_intermediate_size": 1407}, _deepseek_v2),
    "kimi_k2": ({"tie_word_embeddings": False, "moe_intermediate_size": 2048}, _deepseek_v3),
    "glm4_moe": ({"tie_word_embeddings": False}, _glm4_moe),
    "olmo2": ({"tie_word_embeddings": False}, _olmo2),
    "qwen3_next": ({"tie_word_embeddings": False, "head_dim": 256, "num_experts": 512, "num_experts_per_tok": 10,
                    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "linear_num_key_heads": 16,
                    "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                    "linear_conv_kernel_dim": 4}, _qwen3_next),
    "granitemoehybrid": ({"tie_word_embeddings": True}, _granitemoehybrid),
    "llama4_text": ({"tie_word_embeddings": False}, _llama4),
}
_FAMILIES["llama4"] = _FAMILIES["llama4_text"]
_FAMILIES["gemma3"] = _FAMILIES["gemma3_text"]
_FAMILIES["deepseek_v32"] = ({"tie_word_embeddings": False}, _sparse_indexed)
_FAMILIES["glm_moe_dsa"] = ({"tie_word_embeddings": False}, _sparse_indexed)
# GLM-4.7-Flash (Glm4MoeLiteForCausalLM): the DeepSeek-V3 layout (MLA, leading dense layers, shared expert);
# llama.cpp converts it as its DEEPSEEK2 architecture (conversion/glm.py Glm4MoeLiteModel(DeepseekV2Model))
_FAMILIES["glm4_moe_lite"] = ({"tie_word_embeddings": False}, _deepseek_v3)
_FAMILIES["gemma4"] = _FAMILIES["gemma4_text"] = ({"tie_word_embeddings": True}, _gemma4_text)
# Gemma3nTextConfig's defaults (transformers 4.53.0, documented as google/gemma-3n-E4B)
_FAMILIES["gemma3n"] = _FAMILIES["gemma3n_text"] = (
    {"tie_word_embeddings": True, "vocab_size": 262400, "vocab_size_per_layer_input": 262144, "hidden_size": 2048,
     "hidden_size_per_layer_input": 256, "intermediate_size": 16384, "num_hidden_layers": 35,
     "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768,
     "rope_theta": 1e6, "sliding_window": 512, "altup_num_inputs": 4, "num_kv_shared_layers": 15, "laurel_rank": 64,
     "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 25}, _gemma3n_text)
_FAMILIES["qwen3_5"] = _FAMILIES["qwen3_5_moe"] = ({"tie_word_embeddings": False}, _qwen3_5)
_FAMILIES["qwen3_vl"] = ({"tie_word_embeddings": False}, _qwen3_vl)
_FAMILIES["seed_oss"] = ({"tie_word_embeddings": False}, _seed_oss)


def siglip_params(vc: dict, text_width: int) -> int:
    """Parameters of a Gemma 3 SigLIP vision tower plus its projector into the text width.

    Patch conv (+bias), learned position per patch, per layer: q/k/v/o with biases, two LayerNorms,
    GELU MLP with biases; a post LayerNorm; then the projector matrix and its RMSNorm.
    """
    w = int(vc.get("hidden_size", 1152))
    ff = int(vc.get("intermediate_size", 4304))
    layers = int(vc.get("num_hidden_layers", 27))
    patch = int(vc.get("patch_size", 14))
    image = int(vc.get("image_size", 896))
    channels = int(vc.get("num_channels", 3))
    embed = channels * patch * patch * w + w + (image // patch) ** 2 * w
    per_layer = 4 * (w * w + w) + 2 * w * ff + ff + w + 2 * 2 * w
    tower = embed + layers * per_layer + 2 * w
    return tower + w * text_width + w


def llama4_vision_params(vc: dict, text_width: int) -> int:
    """Parameters of a Llama 4 vision encoder, its pixel-shuffle adapter and projector (transformers
    Llama4VisionModel + Llama4MultiModalProjector).

    Patch embedding (unfold + linear, no bias), class embedding, a learned position per patch and for the
    class token, pre/post LayerNorms; per layer q/k/v/o with biases, GELU MLP with biases, two LayerNorms;
    the adapter MLP (intermediate -> projector_input, projector_output -> projector_output, no biases);
    the projector vision_output_dim -> text width (no bias)."""
    w = int(vc.get("hidden_size", 1408))
    ff = int(vc.get("intermediate_size", 5632))
    layers = int(vc.get("num_hidden_layers", 34))
    patch, image, ch = int(vc.get("patch_size", 14)), int(vc.get("image_size", 336)), int(vc.get("num_channels", 3))
    p_in, p_out = int(vc.get("projector_input_dim", 4096)), int(vc.get("projector_output_dim", 4096))
    out_dim = int(vc.get("vision_output_dim", 4096))
    embed = ch * patch * patch * w + w + ((image // patch) ** 2 + 1) * w + 2 * 2 * w
    per_layer = 4 * (w * w + w) + 2 * w * ff + ff + w + 2 * 2 * w
    adapter = ff * p_in + p_out * p_out
    return embed + layers * per_layer + adapter + out_dim * text_width


def qwen_vl_vision_params(vc: dict, text_width: int) -> int:
    """Parameters of a Qwen3-VL / Qwen3.5 vision tower and its mergers (transformers Qwen3VLVisionModel):
    Conv3d patch embedding with bias, a learned position per grid cell, per block two LayerNorms and biased
    qkv / proj / fc1 / fc2, the merger (LayerNorm over the hidden size, then a biased 4w x 4w and 4w x text
    width after the 2x2 merge) and one deepstack merger per ``deepstack_visual_indexes`` entry (LayerNorm
    over 4w)."""
    w, ff, depth = int(vc.get("hidden_size", 1152)), int(vc.get("intermediate_size", 4304)), int(vc.get("depth", 27))
    patch, tpatch, ch = int(vc.get("patch_size", 16)), int(vc.get("temporal_patch_size", 2)), int(vc.get("in_channels", 3))
    merged = w * int(vc.get("spatial_merge_size", 2)) ** 2
    out = int(vc.get("out_hidden_size", text_width))
    embed = ch * tpatch * patch * patch * w + w + int(vc.get("num_position_embeddings", 2304)) * w
    block = 4 * w + (3 * w * w + 3 * w) + (w * w + w) + (w * ff + ff) + (ff * w + w)

    def merger(norm_width):
        return 2 * norm_width + merged * merged + merged + merged * out + out
    return embed + depth * block + merger(w) + len(vc.get("deepstack_visual_indexes") or []) * merger(merged)


def _flatten_text_config(cfg: dict) -> dict:
    """Multimodal configs (Gemma 3) keep the decoder under ``text_config``."""
    tc = cfg.get("text_config")
    if not isinstance(tc, dict):
        return cfg
    out = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}
    out.update(tc)
    out["model_type"] = cfg.get("model_type") or tc.get("model_type", "")
    return out


def spec_from_hf_config(cfg: dict, id: str = "", where: str = "config") -> ModelSpec:
    """A ModelSpec from a parsed config.json (see the module docstring for the families handled)."""
    if not isinstance(cfg, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(cfg).__name__}")
    flat = _flatten_text_config(cfg)
    model_type = str(flat.get("model_type") or "unknown")
    defaults, reader = _FAMILIES.get(model_type, ({}, _llama))
    flat = {**defaults, **flat}          # a field present as null stays null (Mistral v0.3 sliding_window)
    check_types(flat, where)             # counts, numbers and flags of their JSON types: int("32") is no count
    if isinstance(cfg.get("vision_config"), dict):
        check_types(cfg["vision_config"], f"{where} vision_config", VISION_COUNTS)
    try:
        if model_type not in _FAMILIES:   # an unmodelled field is named before any field the reader lacks
            _refuse_unmodelled(flat, model_type)
        kw = _standard(flat, need_ff=model_type not in ("gptj", "qwen3_5_moe"))
        if model_type not in _FAMILIES:
            _moe_generic(flat, kw)
        reader(flat, kw)
        vision = cfg.get("vision_config")
        if model_type == "gemma3" and isinstance(vision, dict):
            kw["vision_params"] = siglip_params(vision, kw["d_model"])
        if model_type == "llama4" and isinstance(vision, dict):
            kw["vision_params"] = llama4_vision_params(vision, kw["d_model"])
        if model_type in ("qwen3_5", "qwen3_5_moe", "qwen3_vl") and isinstance(vision, dict):
            kw["vision_params"] = qwen_vl_vision_params(vision, kw["d_model"])
    except (TypeError, ValueError) as e:
        if isinstance(e, UserError):
            raise UserError(f"{where}: {e}") from None
        raise UserError(f"{where}: unreadable field value ({e})") from None
    name = id or str(cfg.get("_name_or_path") or model_type)
    kw.update(_released_format(cfg, where))
    return ModelSpec(id=name, name=name, family=model_type, **kw)


# quantization_config.quant_method -> the --quant name of those weights (the checkpoint as released)
RELEASED_QUANT_METHODS = {"fp8": "FP8", "mxfp4": "MXFP4"}


def _released_format(cfg: dict, where: str) -> dict:
    """``released_format`` (+ its source) where the config's ``quantization_config`` names a format tokspeed
    models as one ``--quant`` name (FP8, MXFP4); nothing otherwise (BF16 assumed)."""
    qc = cfg.get("quantization_config")
    method = str(qc.get("quant_method", "")).lower() if isinstance(qc, dict) else ""
    fmt = RELEASED_QUANT_METHODS.get(method)
    if not fmt:
        return {}
    return {"released_format": fmt, "released_format_source": f"{where}: quantization_config.quant_method {method}"}
