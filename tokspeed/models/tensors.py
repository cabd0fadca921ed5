"""The weight tensors of a ModelSpec, in GGUF naming: (role, layer, rows, cols).

``cols`` is the input (row) length, the dimension quantization blocks run along. Expert stacks hold
all experts of a layer (rows = n_experts * d_ff_expert for gate/up). 1-D tensors (norms, biases, sinks)
have role ``norm`` and rows = 1. The sum of their elements equals ``ModelSpec.n_params`` (a test checks it).
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=256)
def weight_tensors(spec) -> tuple[tuple[str, int | None, int, int], ...]:
    """The tensors of ``spec`` (a frozen, hashable ModelSpec), computed once per shape."""
    return tuple(_weight_tensors(spec))


def _weight_tensors(spec) -> list[tuple[str, int | None, int, int]]:
    d = spec.d_model
    out: list[tuple[str, int | None, int, int]] = [("token_embd", None, spec.vocab_size, d)]
    norm_width = 2 if spec.norm == "layernorm" else 1
    for i in range(spec.n_layers):
        out.append(("norm", i, 1, (spec.norms_per_layer - (0 if spec.has_ffn(i) else 1)) * norm_width * d))
        if spec.is_linear_layer(i):
            # linear attention / SSM mixer: projections quantize like matrices; the conv and the
            # per-head vectors stay F32 (llama.cpp's quantize skips ssm_conv1d, ssm_a, ssm_d)
            small = spec.linear_params_per_layer() - d * spec.linear_in_rows - spec.linear_value_dim * d
            out += [("ssm_in", i, spec.linear_in_rows, d), ("norm", i, 1, small), ("ssm_out", i, d, spec.linear_value_dim)]
        elif spec.is_mla:
            qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
            if spec.q_lora_rank:
                out += [("attn_q_a", i, spec.q_lora_rank, d), ("norm", i, 1, spec.q_lora_rank),
                        ("attn_q_b", i, spec.n_heads * qk, spec.q_lora_rank)]
            else:
                out.append(("attn_q", i, spec.n_heads * qk, d))
            out += [("attn_kv_a_mqa", i, spec.kv_lora_rank + spec.qk_rope_head_dim, d),
                    ("norm", i, 1, spec.kv_lora_rank),
                    ("attn_kv_b", i, spec.n_heads * (spec.qk_nope_head_dim + spec.v_head_dim), spec.kv_lora_rank)]
            if spec.index_topk:     # the lightning indexer's matrices and its key LayerNorm
                out += [(role, i, rows, cols) for role, rows, cols in indexer_shapes(spec)]
                out.append(("norm", i, 1, 2 * spec.index_head_dim))
        else:
            projs = attention_shapes(spec, spec.has_global_shape and spec.is_full_layer(i))
            out += [(role, i, rows, cols) for role, rows, cols in projs[:-1]]
            q_dim, kv_dim, hd = projs[-1][2], projs[1][1], projs[-1][2] // spec.n_heads
            small = (q_dim + (len(projs) - 2) * kv_dim if spec.qkv_bias else 0) + (2 * hd if spec.qk_norm else 0) \
                + (spec.n_heads if spec.attn_sinks else 0) + (d if spec.o_bias else 0)
            if small:
                out.append(("norm", i, 1, small))
            out.append(projs[-1][:1] + (i,) + projs[-1][1:])
        if spec.is_mla:
            out.append(("attn_output", i, d, spec.attn_out_dim))
        dense = (not spec.is_moe) or i < spec.n_dense_layers
        if not spec.has_ffn(i):      # a mixer-only layer (Nemotron-H)
            pass
        elif dense:
            out += _mlp(spec, i, "", spec.d_ff, 1, spec.mlp_bias)
        else:
            out.append(("ffn_gate_inp", i, spec.n_experts, d))
            if spec.router_bias or spec.shared_expert_gate:
                out.append(("norm", i, 1, (spec.n_experts if spec.router_bias else 0)
                            + (d if spec.shared_expert_gate else 0)))
            out += _mlp(spec, i, "_exps", spec.d_ff_expert, spec.n_experts, spec.expert_bias)
            if spec.n_shared_experts:
                out += _mlp(spec, i, "_shexp", (spec.d_ff_shared or spec.d_ff_expert) * spec.n_shared_experts, 1,
                            spec.mlp_bias)
    out += per_layer_stream_tensors(spec)
    out.append(("norm", None, 1, norm_width * d))
    if not spec.tied_embeddings:
        out.append(("output", None, spec.vocab_size, d))
        if spec.lm_head_bias:
            out.append(("norm", None, 1, spec.vocab_size))
    return out


def per_layer_stream_tensors(spec) -> list[tuple[str, int | None, int, int]]:
    """Gemma 3n's extra tensors in llama.cpp's GGUF names (src/models/gemma3n.cpp load_arch_tensors): the per-layer
    input table and its projection (with a norm), AltUp's up / down projections (the (n-1) d x d matrices
    stacked), and per layer the input gate and projection, AltUp's router and coefficients, LAuReL's two factors
    and the four vectors (per-layer post norm, AltUp correction scale and router norm, LAuReL post norm)."""
    if not spec.has_per_layer_streams:
        return []
    d, L, P, n, r = spec.d_model, spec.n_layers, spec.ple_dim, spec.altup_inputs, spec.laurel_rank
    out = [("per_layer_token_embd", None, spec.ple_vocab, L * P), ("per_layer_model_proj", None, L * P, d),
           ("norm", None, 1, P), ("altup_proj", None, (n - 1) * d, d), ("altup_unembd_proj", None, (n - 1) * d, d)]
    for i in range(L):
        out += [("inp_gate", i, P, d), ("proj", i, d, P), ("altup_router", i, n, d),
                ("altup_predict_coef", i, n * n, n), ("altup_correct_coef", i, n, n), ("laurel_l", i, r, d),
                ("laurel_r", i, d, r), ("norm", i, 1, 4 * d)]
    return out


def indexer_shapes(spec) -> list[tuple[str, int, int]]:
    """(role, rows, cols) of a sparse-attention indexer's matrices: queries from the q latent, one key, and
    the per-head weights (DeepSeek-V3.2 Indexer wq_b, wk, weights_proj)."""
    H, D = spec.index_n_heads, spec.index_head_dim
    return [("indexer_q", H * D, spec.q_lora_rank), ("indexer_k", D, spec.d_model), ("indexer_proj", H, spec.d_model)]


def attention_shapes(spec, full: bool = False) -> list[tuple[str, int, int]]:
    """(role, rows, cols) of a plain attention layer's q, k, v (none when K = V) and output projections;
    ``full``: a full-attention layer with its own head shape (Gemma 4)."""
    d = spec.d_model
    hd = spec.full_head_dim if full else spec.head_dim
    q_dim, kv_dim = spec.n_heads * hd, (spec.full_kv_heads if full else spec.n_kv_heads) * hd
    kv = [("attn_k", kv_dim, d)] + ([] if full and spec.global_kv_shared else [("attn_v", kv_dim, d)])
    return [("attn_q", q_dim * (2 if spec.attn_output_gate else 1), d)] + kv + [("attn_output", d, q_dim)]


def _mlp(spec, i, suffix, d_ff, stack, bias):
    d = spec.d_model
    out = []
    if spec.gated_mlp:
        out.append(("ffn_gate" + suffix, i, stack * d_ff, d))
    out += [("ffn_up" + suffix, i, stack * d_ff, d), ("ffn_down" + suffix, i, stack * d, d_ff)]
    if bias:
        out.append(("norm", i, 1, stack * ((2 if spec.gated_mlp else 1) * d_ff + d)))
    return out
