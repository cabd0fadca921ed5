"""The operator ledger: every operator of one forward pass, with FLOPs and bytes moved.

One function, ``forward_ops``, serves prefill and decode alike (decode is a pass over one new token
per sequence with a deep KV cache; prefill is a pass over many). Weights come from a WeightStorage, so a
Q4_K_M scheme and a real GGUF file go through the same arithmetic.

Conventions (per pass, summed over the ``count`` layers an op stands for):
- ``flops``: 2 per multiply-accumulate; softmax counted as 5 per score; norms 4 per element.
- ``weight_bytes``: stored bytes of the weights the op reads (read once per pass, shared by the batch).
- ``act_bytes``: activations read + written, 2 bytes per value (FP16/BF16 activations).
- ``kv_read_bytes`` / ``kv_write_bytes``: KV cache traffic at the KV dtype.
- The embedding lookup reads one row per token (not the table); the LM head reads its whole matrix but
  only for the last position of each sequence (llama.cpp and vLLM compute logits for the last token).
- MoE: a pass over T tokens with top-k of E experts reads the expected number of distinct experts
  E * (1 - (1 - k/E)**T) per layer; compute is T*k expert FFNs.
- Attention over the cache is exact for causal prefill: query i of n attends ``depth + i + 1`` tokens
  (capped at the window on sliding layers).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

ACT_BYTES = 2.0


class Role(str, Enum):
    """What an operator is. Every decision about an operator (TP sharding, pipeline stage, explain
    grouping) keys on its role and scope; ``Op.name`` is for display only."""
    EMBED = "embed"                     # token embedding gather
    ATTN_NORM = "attn_norm"
    QKV = "qkv"                         # q/k/v projections (MLA: q_a, q_b, kv_a, kv_b)
    ROPE = "rope"
    ATTN_CORE = "attn_core"             # scores, softmax, values over the KV cache
    LINEAR_PROJ = "linear_proj"         # hybrid models: in/out projections of a linear-attention / SSM mixer
    STATE_SCAN = "state_scan"           # hybrid models: conv + recurrent update over the fixed-size state
    O_PROJ = "o_proj"
    ATTN_RESIDUAL = "attn_residual"
    FFN_NORM = "ffn_norm"
    MLP = "mlp"                         # dense FFN gate/up/down
    MLP_ACT = "mlp_act"
    ROUTER = "router"
    EXPERTS = "experts"                 # routed experts gate/up/down
    EXPERTS_ACT = "experts_act"
    SHARED_EXPERTS = "shared_experts"
    SHARED_ACT = "shared_act"
    FFN_RESIDUAL = "ffn_residual"
    FINAL_NORM = "final_norm"
    LM_HEAD = "lm_head"
    SAMPLE = "sample"                   # logits to the CPU, sampling


class Scope(str, Enum):
    """Where in the model an operator runs: before the layers, in every layer / the dense-FFN layers,
    in the MoE layers, or after the layers."""
    INPUT = "input"
    DENSE = "dense"
    MOE = "moe"
    HEAD = "head"


NORM_ROLES = frozenset({Role.ATTN_NORM, Role.FFN_NORM, Role.ATTN_RESIDUAL, Role.FFN_RESIDUAL, Role.FINAL_NORM})


@dataclass
class Op:
    name: str             # display only
    role: Role
    scope: Scope
    unit: str             # tensor (matmul) | vector (elementwise, attention core) | memory (gather) | cpu
    count: int            # layers (or 1) this row stands for
    flops: float = 0.0
    weight_bytes: float = 0.0
    act_bytes: float = 0.0
    kv_read_bytes: float = 0.0
    kv_write_bytes: float = 0.0
    kernels: int = 1      # GPU kernels launched per layer for this op (llama.cpp-style, unfused)
    layers: tuple = ()    # (first, end) layers of a DENSE/MOE op; () for INPUT/HEAD ops

    def __post_init__(self):
        if not isinstance(self.role, Role) or not isinstance(self.scope, Scope):
            raise ValueError(f"operator {self.name!r}: unknown role {self.role!r} or scope {self.scope!r}")

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.act_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")


def expected_experts(n_experts: int, k: int, tokens: int) -> float:
    """Expected distinct experts touched when ``tokens`` tokens each pick k of E uniformly."""
    if n_experts == 0:
        return 0.0
    return n_experts * (1.0 - (1.0 - k / n_experts) ** tokens)


def _attended(depth: int, n: int, window: int) -> float:
    """Sum over the n new queries of the number of keys each attends (causal, optional window)."""
    total = n * depth + n * (n + 1) / 2
    if not window or depth + n <= window:
        return total
    # queries i = 0..n-1 attend min(window, depth + i + 1)
    first_capped = max(0, window - depth - 1)           # queries before this attend depth+i+1 < window
    first_capped = min(first_capped, n)
    uncapped = first_capped * depth + first_capped * (first_capped + 1) / 2
    return uncapped + (n - first_capped) * window


def _attended_chunked(depth: int, n: int, chunk: int) -> float:
    """Keys attended by queries at positions depth..depth+n-1 when each attends only its own chunk of
    ``chunk`` positions (Llama 4): the query at position p attends (p mod chunk) + 1 keys."""
    def prefix(m: int) -> int:          # sum over p < m of (p mod chunk) + 1
        full, rest = divmod(m, chunk)
        return full * chunk * (chunk + 1) // 2 + rest * (rest + 1) // 2
    return float(prefix(depth + n) - prefix(depth))


def forward_ops(spec, storage, kv_elem_bytes: float, batch: int = 1, n_tokens: int = 1, depth: int = 0,
                logits_all: bool = False) -> list[Op]:
    """Operators of one forward pass over ``n_tokens`` new tokens per sequence for ``batch`` sequences,
    with ``depth`` tokens already cached per sequence."""
    B, n, d = batch, n_tokens, spec.d_model
    T = B * n                                   # tokens in the pass
    L = spec.n_layers
    ops: list[Op] = []
    wb = storage.tensor_bytes

    def layers_sum(role, rows, cols, layers):
        return sum(wb(role, i, rows, cols) for i in layers)

    all_layers = range(L)

    # -- embedding: one row per token ---------------------------------------------------------
    row_bytes = wb("token_embd", None, 1, d)
    ops.append(Op("token embedding gather", Role.EMBED, Scope.INPUT, "memory", 1,
                  weight_bytes=min(T, spec.vocab_size) * row_bytes, act_bytes=T * d * ACT_BYTES))

    # -- attention -----------------------------------------------------------------------------
    norm_flops = 4 * d * T
    ops.append(Op("attention norm", Role.ATTN_NORM, Scope.DENSE, "vector", L, layers=(0, L), flops=L * norm_flops,
                  weight_bytes=L * d * storage.element_bytes("norm", 0),
                  act_bytes=L * 2 * T * d * ACT_BYTES))
    if spec.is_mla:
        qk_head = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        projs = []
        if spec.q_lora_rank:
            projs += [("attn_q_a", spec.q_lora_rank, d), ("attn_q_b", spec.n_heads * qk_head, spec.q_lora_rank)]
        else:
            projs += [("attn_q", spec.n_heads * qk_head, d)]
        projs += [("attn_kv_a_mqa", spec.kv_lora_rank + spec.qk_rope_head_dim, d),
                  ("attn_kv_b", spec.n_heads * (spec.qk_nope_head_dim + spec.v_head_dim), spec.kv_lora_rank)]
    else:
        projs = [("attn_q", spec.q_proj_rows, d), ("attn_k", spec.kv_dim, d), ("attn_v", spec.kv_dim, d)]
    # a hybrid model's linear layers have no q/k/v, RoPE or KV cache (their ops follow below)
    attn_layers = [i for i in all_layers if not spec.is_linear_layer(i)] if spec.n_linear_layers else all_layers
    La = len(attn_layers)
    for role, rows, cols in projs:
        ops.append(Op(f"{role} projection", Role.QKV, Scope.DENSE, "tensor", La, layers=(0, L), flops=La * 2 * T * rows * cols,
                      weight_bytes=layers_sum(role, rows, cols, attn_layers),
                      act_bytes=La * T * (rows + cols) * ACT_BYTES))
    rot = spec.qk_rope_head_dim if spec.is_mla else (spec.rotary_dim or spec.head_dim)
    ops.append(Op("RoPE", Role.ROPE, Scope.DENSE, "vector", La, layers=(0, L), flops=La * 3 * T * (spec.n_heads + spec.n_kv_heads) * rot,
                  act_bytes=La * 2 * T * (spec.n_heads + spec.n_kv_heads) * rot * ACT_BYTES))

    # attention core over the cache, split into full and sliding layers
    kv_per_tok_layer = spec.kv_elements_per_token_layer * kv_elem_bytes
    if spec.is_mla:
        # absorbed MLA decode: scores over (kv_lora + rope) dims, values over kv_lora dims, per head
        score_dim, value_dim = spec.kv_lora_rank + spec.qk_rope_head_dim, spec.kv_lora_rank
    else:
        score_dim, value_dim = spec.head_dim, spec.head_dim
    for label, layers, window in (("", spec.n_full_layers, 0), (" (sliding window)", spec.n_sliding_layers,
                                                                  spec.sliding_window)):
        if not layers:
            continue
        if window and spec.chunked_attention:
            label = " (chunked)"
            pairs = _attended_chunked(depth, n, window)
            cached = depth % window
        else:
            pairs = _attended(depth, n, window)     # query-key pairs per sequence per head
            cached = min(depth, window) if window else depth
        flops = layers * B * spec.n_heads * pairs * (2 * score_dim + 2 * value_dim + 5)
        ops.append(Op("attention scores/softmax/values" + label, Role.ATTN_CORE, Scope.DENSE, "tensor", layers,
                      layers=(0, L), flops=flops,
                      kv_read_bytes=layers * B * (cached + n) * kv_per_tok_layer,
                      kv_write_bytes=layers * B * n * kv_per_tok_layer,
                      act_bytes=layers * T * (spec.q_dim + spec.attn_out_dim) * ACT_BYTES, kernels=3))
    ops.append(Op("attn_output projection", Role.O_PROJ, Scope.DENSE, "tensor", La, layers=(0, L), flops=La * 2 * T * d * spec.attn_out_dim,
                  weight_bytes=layers_sum("attn_output", d, spec.attn_out_dim, attn_layers),
                  act_bytes=La * T * (d + spec.attn_out_dim) * ACT_BYTES))
    if spec.n_linear_layers:
        ops.extend(_linear_mixer_ops(spec, storage, [i for i in all_layers if spec.is_linear_layer(i)], B, T))
    ops.append(Op("residual add (attention)", Role.ATTN_RESIDUAL, Scope.DENSE, "vector", L, layers=(0, L), flops=L * T * d,
                  act_bytes=L * 3 * T * d * ACT_BYTES))

    # -- FFN / MoE -----------------------------------------------------------------------------
    ops.append(Op("FFN norm", Role.FFN_NORM, Scope.DENSE, "vector", L, layers=(0, L), flops=L * norm_flops,
                  weight_bytes=L * d * storage.element_bytes("norm", 0), act_bytes=L * 2 * T * d * ACT_BYTES))
    dense_layers = range(spec.n_ffn_dense_layers) if spec.is_moe else all_layers
    if len(dense_layers) and spec.d_ff:
        ops.extend(_mlp_ops(spec, storage, "", spec.d_ff, dense_layers, T, 1.0, Role.MLP, Role.MLP_ACT))
    if spec.is_moe:
        moe_layers = range(spec.n_dense_layers, L)
        Lm = len(moe_layers)
        ops.append(Op("MoE router", Role.ROUTER, Scope.MOE, "tensor", Lm, layers=(spec.n_dense_layers, L), flops=Lm * 2 * T * d * spec.n_experts,
                      weight_bytes=sum(wb("ffn_gate_inp", i, spec.n_experts, d) for i in moe_layers),
                      act_bytes=Lm * T * (d + spec.n_experts) * ACT_BYTES))
        touched = expected_experts(spec.n_experts, spec.n_active_experts, T)
        ops.extend(_mlp_ops(spec, storage, "_exps", spec.d_ff_expert, moe_layers, T * spec.n_active_experts,
                            touched / spec.n_experts, Role.EXPERTS, Role.EXPERTS_ACT, stack=spec.n_experts))
        if spec.n_shared_experts:
            ops.extend(_mlp_ops(spec, storage, "_shexp", (spec.d_ff_shared or spec.d_ff_expert) *
                                spec.n_shared_experts, moe_layers, T, 1.0, Role.SHARED_EXPERTS, Role.SHARED_ACT))
    ops.append(Op("residual add (FFN)", Role.FFN_RESIDUAL, Scope.DENSE, "vector", L, layers=(0, L), flops=L * T * d, act_bytes=L * 3 * T * d * ACT_BYTES))

    # -- head ----------------------------------------------------------------------------------
    rows_out = T if logits_all else B
    ops.append(Op("final norm", Role.FINAL_NORM, Scope.HEAD, "vector", 1, flops=4 * d * rows_out,
                  weight_bytes=d * storage.element_bytes("norm", None), act_bytes=2 * rows_out * d * ACT_BYTES))
    head_role = "token_embd" if spec.tied_embeddings else "output"
    ops.append(Op("LM head", Role.LM_HEAD, Scope.HEAD, "tensor", 1, flops=2 * rows_out * d * spec.vocab_size,
                  weight_bytes=wb(head_role, None, spec.vocab_size, d),
                  act_bytes=rows_out * (d + spec.vocab_size) * ACT_BYTES))
    ops.append(Op("sampling (logits to CPU)", Role.SAMPLE, Scope.HEAD, "cpu", 1, flops=5 * B * spec.vocab_size,
                  act_bytes=B * spec.vocab_size * 4))
    return ops


STATE_BYTES = 4.0   # llama.cpp keeps recurrent states in F32 (recurrent_type_r/_s, src/llama-model.cpp)


def _linear_mixer_ops(spec, storage, layers, B, T) -> list[Op]:
    """A hybrid model's linear-attention / state-space layers: input and output projections (matmuls
    over the weights) and the scan, which reads and writes each sequence's fixed-size state once per
    pass (conv tail + recurrent matrix, F32) whatever the context, and does ``state_flops_per_token_layer``
    per token. The state traffic is counted as activation bytes: it is no KV cache and does not grow."""
    d, n = spec.d_model, len(layers)
    span = (0, spec.n_layers)
    w = sum(storage.tensor_bytes("ssm_in", i, spec.linear_in_rows, d)
            + storage.tensor_bytes("ssm_out", i, d, spec.linear_value_dim) for i in layers)
    proj = Op("linear-attention/SSM in+out projections", Role.LINEAR_PROJ, Scope.DENSE, "tensor", n, layers=span,
              flops=n * 2 * T * d * (spec.linear_in_rows + spec.linear_value_dim), weight_bytes=w,
              act_bytes=n * T * (d + spec.linear_in_rows + spec.linear_value_dim + d) * ACT_BYTES)
    state = n * B * spec.state_elements_per_layer * STATE_BYTES
    scan = Op("conv + recurrent state update", Role.STATE_SCAN, Scope.DENSE, "vector", n, layers=span,
              flops=n * T * spec.state_flops_per_token_layer, act_bytes=2 * state, kernels=3)
    return [proj, scan]


def _mlp_ops(spec, storage, suffix, d_ff, layers, tokens, fraction_read, role_mm, role_act, stack=1):
    """gate/up/down of a (gated) MLP over ``layers``. ``stack``: experts per stored tensor;
    ``fraction_read``: share of the stack the pass reads; ``tokens``: token-rows computed."""
    d = spec.d_model
    n = len(layers)
    scope = Scope.DENSE if role_mm is Role.MLP else Scope.MOE
    span = (layers.start, layers.stop)
    roles = ([("ffn_gate", d_ff, d)] if spec.gated_mlp else []) + [("ffn_up", d_ff, d), ("ffn_down", d, d_ff)]
    out = []
    for role, rows, cols in roles:
        stored = sum(storage.tensor_bytes(role + suffix, i, rows * stack, cols) for i in layers)
        out.append(Op(f"{role}{suffix} projection", role_mm, scope, "tensor", n, layers=span, flops=2 * tokens * rows * cols * n,
                      weight_bytes=stored * fraction_read, act_bytes=n * tokens * (rows + cols) * ACT_BYTES))
    out.append(Op(f"activation{suffix} ({'SwiGLU' if spec.gated_mlp else 'GELU'})", role_act, scope, "vector", n, layers=span,
                  flops=n * tokens * d_ff * 8, act_bytes=n * 3 * tokens * d_ff * ACT_BYTES))
    return out


def resident_weight_bytes(spec, storage) -> float:
    """Bytes of every weight held in memory (the whole embedding table, every expert, norms, biases)."""
    from .models.tensors import weight_tensors

    memo = getattr(storage, "resident_memo", None)     # a storage may remember it per spec (tokspeed.fit)
    if memo is not None and spec in memo:
        return memo[spec]
    total = sum(storage.tensor_bytes(role, layer, rows, cols) for role, layer, rows, cols in weight_tensors(spec))
    if memo is not None:
        memo[spec] = total
    return total
