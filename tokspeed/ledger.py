"""The operator ledger: every operator of one forward pass, with FLOPs and bytes moved.

One function, ``forward_ops``, serves prefill and decode alike (decode is a pass over one new token
per sequence with a deep KV cache; prefill is a pass over many). Weights come from a WeightStorage, so a
Q4_K_M scheme and a real GGUF file go through the same arithmetic.

Conventions (per pass, summed over the ``count`` layers an op stands for):
- ``flops``: 2 per multiply-accumulate. Element-wise operators use the per-element counts below; they are
  memory bound by a wide margin (well under 1 FLOP per byte), so these counts move no prediction and only
  show in ``explain``'s FLOP column:
  - ``NORM_FLOPS_PER_ELEMENT`` = 4: RMSNorm squares, accumulates, scales by 1/rms and by the weight.
  - ``ROPE_FLOPS_PER_ELEMENT`` = 3: each rotated element is ``x·cos − y·sin`` (2 multiplies, 1 add);
    the sin/cos tables are not counted.
  - ``SOFTMAX_FLOPS_PER_SCORE`` = 5: max, subtract, exp, sum, divide (also ``SAMPLE_FLOPS_PER_LOGIT``).
  - ``ACTIVATION_FLOPS_PER_ELEMENT`` = 8 per intermediate element: the op count of the tanh GELU
    ``0.5·x·(1 + tanh(0.79788·(x + 0.044715·x³)))``, an upper bound for SwiGLU's ``g·sigmoid(g)·u`` (~5).
- ``kernels``: GPU launches per layer, one per operator except ``ATTENTION_KERNELS`` = 3 for the attention
  core: llama.cpp's unfused graph runs it as KQ ``mul_mat``, ``soft_max_ext``, KQV ``mul_mat``.
  (FlashAttention fuses them into one; the engine's fitted ``launch_s`` absorbs the difference.)
- ``weight_bytes``: stored bytes of the weights the op reads (read once per pass, shared by the batch).
- ``act_bytes``: activations read + written, 2 bytes per value (FP16/BF16 activations).
- ``kv_read_bytes`` / ``kv_write_bytes``: KV cache traffic at the KV dtype, each cached K/V head read once.
- ``query_heads_per_kv``: query heads attending each cached K/V head (``n_heads / n_kv_heads``). An engine
  whose attention is not fused reads each K/V head once per query head, the GPU's cache serving some of
  the re-reads (``EngineProfile.kv_reread``, ``timing.kv_reads``). MLA's latent counts 1: llama.cpp ran
  DeepSeek with a per-head K/V cache before it had MLA (2025), and no measurement shows its unfused latent
  path re-reading per head.
- The embedding lookup reads one row per token (not the table); the LM head reads its whole matrix but
  only for the last position of each sequence (llama.cpp and vLLM compute logits for the last token).
- MoE: a pass over T tokens with top-k of E experts reads the expected number of distinct experts
  E * (1 - (1 - k/E)**T) per layer; compute is T*k expert FFNs.
- Full-attention layers with their own head shape (Gemma 4: ``global_head_dim``, ``global_kv_heads``, K = V) get
  their own q/k/v/o, RoPE and attention-core rows, labelled "(full attention)" (``_attention_groups``).
- Attention over the cache is exact for causal prefill: query i of n attends ``depth + i + 1`` tokens
  (capped at the window on sliding layers).
- Ignored in the per-pass traffic (counted in resident memory, ``models.tensors``): the ledger reads two
  layer norms per layer whatever ``spec.norms_per_layer`` says (Gemma's sandwich norms: 4; parallel blocks:
  1), and neither ``qk_norm`` weights, biases (``qkv_bias``, ``o_bias``, ``mlp_bias``, router/expert
  biases) nor attention sinks. Each is a few d_model-sized vectors per layer: under 0.1 % of the bytes
  of a decode step (Qwen3-8B's q/k norms: 2 x 128 values per layer against 190 M weights per layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .derived import hash_once
from .attended import _attended, _attended_chunked, expected_experts
from .models.tensors import attention_shapes, indexer_shapes, per_layer_stream_tensors, weight_tensors

ACT_BYTES = 2.0
NORM_FLOPS_PER_ELEMENT = 4
ROPE_FLOPS_PER_ELEMENT = 3
SOFTMAX_FLOPS_PER_SCORE = 5
SAMPLE_FLOPS_PER_LOGIT = 5
ACTIVATION_FLOPS_PER_ELEMENT = 8
ATTENTION_KERNELS = 3
STATE_SCAN_KERNELS = 3      # a linear mixer's conv + state update (llama.cpp's graph: engines/linear_mixer.py)


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
    PER_LAYER = "per_layer"             # Gemma 3n: per-layer inputs, AltUp streams, LAuReL (``_per_layer_ops``)
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


@dataclass(frozen=True)
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
    # routed experts: (token, expert) pairs / experts touched = how many times an engine that multiplies each
    # pair on its own (matrix-vector kernels with expert ids) reads each touched expert's weights; 0 otherwise
    pairs_per_expert: float = 0.0
    experts_touched: float = 0.0      # routed experts: distinct experts the pass multiplies, per layer (else 0)
    out_rows: int = 0                 # routed experts: output rows of each expert's matrix (ggml src0 ne[1])
    query_heads_per_kv: float = 1.0   # attention core: query heads sharing each cached K/V head
    # attention core: the K/V bytes its query rows attend, summed over query rows and query heads (a kernel that
    # reads the cache once per block of Br query rows of one head reads kv_row_bytes / Br: engines/fa_tiles.py),
    # and the width of a key (the kernels' tile shapes depend on it)
    kv_row_bytes: float = 0.0
    score_dim: int = 0
    # a linear mixer's scan: one pass over every sequence's state (all its layers), and the rule the graph runs for
    # it (``gated_deltanet`` at one token a sequence, ``gated_deltanet_chunk`` over a prompt, ``mamba2``): what an
    # engine's graph moves around it beyond the ledger's read and write (engines/linear_mixer.py graph_state_bytes)
    state_bytes: float = 0.0
    state_rule: str = ""
    # ... and the F32 token tensors through it, all its layers: the conv's input and output (``conv_io_bytes``),
    # the rule's inputs (x, B, C or q, k, v, and the per-head gates) and output (``rule_io_bytes``): what crosses the
    # host link where a backend runs either op on the CPU (engines/host_ops.py)
    conv_io_bytes: float = 0.0
    rule_io_bytes: float = 0.0

    def __post_init__(self):
        if not isinstance(self.role, Role) or not isinstance(self.scope, Scope):
            raise ValueError(f"operator {self.name!r}: unknown role {self.role!r} or scope {self.scope!r}")

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.act_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")


STATE_BYTES = 4.0   # llama.cpp keeps recurrent states in F32 (recurrent_type_r/_s, src/llama-model.cpp)


# -- the per-(model, weight storage) weight ledger, built once ----------------------------------------

_WEIGHTS_MAX = 64
EXPERT_ROLES = ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")
_weights_cache: dict = {}


@dataclass(frozen=True)
class WeightLedger:
    """Stored bytes of every weight tensor group a forward pass reads, summed over the layers that hold
    it: ``tensor_bytes`` runs once per tensor per (model, storage), not once per operator per pass."""
    by_role: dict          # tensor role (GGUF name, suffix for experts) -> bytes summed over its layers
    embed_row: float       # one row of the token embedding table
    norm_elem: float       # bytes per element of a layer norm weight
    final_norm_elem: float
    resident: float        # every weight held in memory (whole embedding table, every expert, norms)
    per_layer: tuple = ()  # resident bytes of each layer
    embedding: float = 0.0  # the whole token embedding table
    head: float = 0.0       # final norm + LM head (+ its bias)
    experts_per_layer: tuple = ()  # routed-expert stacks of each layer (0 for dense layers)


def weight_ledger(spec, storage) -> WeightLedger:
    """The WeightLedger of (spec, storage), cached by value: specs and quant schemes are frozen and hash once
    (``tokspeed.derived``); a file's storage is its own key (the cache holds it, so no other object takes its place)."""
    key = (spec, storage)
    led = _weights_cache.get(key)
    if led is None:
        led = _build_weight_ledger(spec, storage)
        if len(_weights_cache) >= _WEIGHTS_MAX:
            for k in list(_weights_cache)[:2]:
                del _weights_cache[k]
        _weights_cache[key] = led
    return led


def _attention_groups(spec) -> list[tuple[str, list, list, int]]:
    """(label, attention layers, input projections, output projection width) per attention shape: one group,
    or the sliding and the full-attention layers of a model whose full layers have their own (Gemma 4)."""
    attn = [i for i in range(spec.n_layers) if not spec.is_linear_layer(i)]    # a hybrid's attention layers
    if not spec.has_global_shape:
        return [("", attn, _projections(spec), spec.attn_out_dim)]
    out = []
    for label, full in (("", False), (" (full attention)", True)):
        layers = [i for i in attn if spec.is_full_layer(i) == full]
        shapes = attention_shapes(spec, full)
        if layers:
            out.append((label, layers, shapes[:-1], shapes[-1][2]))
    return out


def _computing(spec, role: str, layers: list) -> list:
    """The layers of ``layers`` that run projection ``role``: all, but K and V only on layers with a cache of their
    own (the last ``kv_shared_layers`` attend an earlier layer's: llama.cpp gemma3n.cpp ``hparams.has_kv``)."""
    if role not in ("attn_k", "attn_v") or not spec.kv_shared_layers:
        return layers
    return [i for i in layers if spec.has_own_cache(i)]


def _projections(spec) -> list[tuple[str, int, int]]:
    """(tensor role, rows, cols) of the attention input projections (of every layer, or of the sliding
    layers when the full-attention layers have their own shape)."""
    d = spec.d_model
    if not spec.is_mla:
        return [("attn_q", spec.q_proj_rows, d), ("attn_k", spec.kv_dim, d), ("attn_v", spec.kv_dim, d)]
    qk_head = spec.qk_nope_head_dim + spec.qk_rope_head_dim
    if spec.q_lora_rank:
        projs = [("attn_q_a", spec.q_lora_rank, d), ("attn_q_b", spec.n_heads * qk_head, spec.q_lora_rank)]
    else:
        projs = [("attn_q", spec.n_heads * qk_head, d)]
    projs += [("attn_kv_a_mqa", spec.kv_lora_rank + spec.qk_rope_head_dim, d),
              ("attn_kv_b", spec.n_heads * (spec.qk_nope_head_dim + spec.v_head_dim), spec.kv_lora_rank)]
    if spec.index_topk:
        projs += indexer_shapes(spec)
    return projs


def _mlp_shapes(spec, d_ff) -> list[tuple[str, int, int]]:
    d = spec.d_model
    return ([("ffn_gate", d_ff, d)] if spec.gated_mlp else []) + [("ffn_up", d_ff, d), ("ffn_down", d, d_ff)]


def _mlp_groups(spec):
    """(suffix, d_ff, layers, experts per stored tensor) of each MLP the model has."""
    L = spec.n_layers
    dense = range(spec.n_ffn_dense_layers)      # the layers without an FFN come last (spec.has_ffn)
    out = []
    if len(dense) and spec.d_ff:
        out.append(("", spec.d_ff, dense, 1))
    if spec.is_moe:
        moe = range(spec.n_dense_layers, spec.n_dense_layers + spec.n_moe_layers)
        out.append(("_exps", spec.d_ff_expert, moe, spec.n_experts))
        if spec.n_shared_experts:
            out.append(("_shexp", (spec.d_ff_shared or spec.d_ff_expert) * spec.n_shared_experts, moe, 1))
    return out


def _build_weight_ledger(spec, storage) -> WeightLedger:
    wb = storage.tensor_bytes
    d, L = spec.d_model, spec.n_layers
    by_role = {}
    for label, layers, projs, out_dim in _attention_groups(spec):
        for role, rows, cols in projs + [("attn_output", d, out_dim)]:
            by_role[role + label] = sum(wb(role, i, rows, cols) for i in _computing(spec, role, layers))
    for role, layer, rows, cols in per_layer_stream_tensors(spec):
        if role != "norm":
            by_role[role] = by_role.get(role, 0.0) + wb(role, layer, rows, cols)
    if spec.n_linear_layers:
        by_role["ssm"] = sum(wb("ssm_in", i, spec.linear_in_rows, d) + wb("ssm_out", i, d, spec.linear_value_dim)
                             for i in range(L) if spec.is_linear_layer(i))
    for suffix, d_ff, layers, stack in _mlp_groups(spec):
        for role, rows, cols in _mlp_shapes(spec, d_ff):
            by_role[role + suffix] = sum(wb(role + suffix, i, rows * stack, cols) for i in layers)
    if spec.is_moe:
        by_role["ffn_gate_inp"] = sum(wb("ffn_gate_inp", i, spec.n_experts, d)
                                      for i in range(spec.n_dense_layers, spec.n_dense_layers + spec.n_moe_layers))
    head_role = "token_embd" if spec.tied_embeddings else "output"
    by_role["lm_head"] = wb(head_role, None, spec.vocab_size, d)
    per_layer, experts = [0.0] * L, [0.0] * L
    resident = embedding = head = 0.0
    for role, layer, rows, cols in weight_tensors(spec):
        b = wb(role, layer, rows, cols)
        resident += b
        if layer is not None:
            per_layer[layer] += b
            if role in EXPERT_ROLES:
                experts[layer] += b
        elif role == "token_embd":
            embedding += b
        else:
            head += b
    if spec.has_per_layer_streams:      # one row of the per-layer input table
        by_role["per_layer_token_embd"] = wb("per_layer_token_embd", None, 1, L * spec.ple_dim)
    return WeightLedger(by_role, wb("token_embd", None, 1, d), storage.element_bytes("norm", 0),
                        storage.element_bytes("norm", None), resident, tuple(per_layer), embedding, head,
                        tuple(experts))


# -- the operators of one pass --------------------------------------------------------------------

_PASS_MAX = 256
_pass_cache: dict = {}


def forward_ops(spec, storage, kv_elem_bytes: float, batch: int = 1, n_tokens: int = 1, depth: float = 0,
                logits_all: bool = False) -> list[Op]:
    """Operators of one forward pass over ``n_tokens`` new tokens per sequence for ``batch`` sequences,
    with ``depth`` tokens already cached per sequence.

    Only the attention core depends on ``depth`` (linearly, up to a sliding window); every other
    operator is built once per (model, storage, batch, tokens) and shared: treat the ops as read-only."""
    before, after = _depth_free_ops(spec, storage, batch, n_tokens, logits_all)
    core = attention_core_ops(spec, kv_elem_bytes, batch, n_tokens, depth)
    ops = PassOps(before + tuple(core) + after)
    ops.segments = (before, core, after)
    return ops


class PassOps(list):
    """The operators of one pass, in order; ``segments`` = (depth-free ops before the attention core,
    the core, depth-free ops after it). The depth-free tuples are shared between passes, so a timer can
    remember their time (``timing.pass_time``'s memo)."""
    segments: tuple = ()


@hash_once
class Segment(tuple):
    """A run of operators shared by every pass of one shape (immutable): what is derived from it (its totals, its
    time on one device, a stage's share) is kept on it (``tokspeed.derived``)."""


def _depth_free_ops(spec, storage, batch, n_tokens, logits_all):
    key = (spec, storage, batch, n_tokens, bool(logits_all))
    hit = _pass_cache.get(key)
    if hit is None:
        before, after = _build_depth_free_ops(spec, weight_ledger(spec, storage), batch, n_tokens, logits_all)
        if len(_pass_cache) >= _PASS_MAX:
            _pass_cache.pop(next(iter(_pass_cache)))
        hit = _pass_cache[key] = (Segment(before), Segment(after))
    return hit


def _build_depth_free_ops(spec, w: WeightLedger, batch, n_tokens, logits_all):
    B, n, d = batch, n_tokens, spec.d_model
    T = B * n                                   # tokens in the pass
    L = spec.n_layers
    span = (0, L)
    before: list[Op] = []
    after: list[Op] = []

    # -- embedding: one row per token ---------------------------------------------------------
    before.append(Op("token embedding gather", Role.EMBED, Scope.INPUT, "memory", 1,
                     weight_bytes=min(T, spec.vocab_size) * w.embed_row, act_bytes=T * d * ACT_BYTES))
    streams = _per_layer_ops(spec, w, T) if spec.has_per_layer_streams else ((), (), ())
    before.extend(streams[0])

    # -- attention -----------------------------------------------------------------------------
    norm_flops = NORM_FLOPS_PER_ELEMENT * d * T
    before.append(Op("attention norm", Role.ATTN_NORM, Scope.DENSE, "vector", L, layers=span, flops=L * norm_flops,
                     weight_bytes=L * d * w.norm_elem, act_bytes=L * 2 * T * d * ACT_BYTES))
    groups = _attention_groups(spec)    # a hybrid model's linear layers have no q/k/v, RoPE or KV cache
    for label, layers, projs, _ in groups:
        for role, rows, cols in projs:
            La = len(_computing(spec, role, layers))
            before.append(Op(f"{role} projection{label}", Role.QKV, Scope.DENSE, "tensor", La, layers=span,
                             flops=La * 2 * T * rows * cols, weight_bytes=w.by_role[role + label],
                             act_bytes=La * T * (rows + cols) * ACT_BYTES))
    for label, layers, _, _ in groups:
        # RoPE: the full-attention layers of Gemma 4 rotate 1/4 of their head (partial_rotary_factor 0.25);
        # counted whole here: an element-wise op that moves no prediction (module docstring)
        La, hd = len(layers), spec.full_head_dim if label else spec.head_dim
        rot = spec.qk_rope_head_dim if spec.is_mla else (spec.rotary_dim or hd)
        heads = spec.n_heads + (spec.full_kv_heads if label else spec.n_kv_heads)
        before.append(Op("RoPE" + label, Role.ROPE, Scope.DENSE, "vector", La, layers=span,
                         flops=La * ROPE_FLOPS_PER_ELEMENT * T * heads * rot,
                         act_bytes=La * 2 * T * heads * rot * ACT_BYTES))
    # (the attention core over the cache goes here: attention_core_ops)
    for label, layers, _, out_dim in groups:
        La = len(layers)
        after.append(Op("attn_output projection" + label, Role.O_PROJ, Scope.DENSE, "tensor", La, layers=span,
                        flops=La * 2 * T * d * out_dim, weight_bytes=w.by_role["attn_output" + label],
                        act_bytes=La * T * (d + out_dim) * ACT_BYTES))
    if spec.n_linear_layers:
        after.extend(_linear_mixer_ops(spec, w, B, T))
    after.append(Op("residual add (attention)", Role.ATTN_RESIDUAL, Scope.DENSE, "vector", L, layers=span,
                    flops=L * T * d, act_bytes=L * 3 * T * d * ACT_BYTES))

    # -- FFN / MoE -----------------------------------------------------------------------------
    Lf = L - spec.n_ffn_free_layers             # layers with an FFN
    after.append(Op("FFN norm", Role.FFN_NORM, Scope.DENSE, "vector", Lf, layers=(0, Lf), flops=Lf * norm_flops,
                    weight_bytes=Lf * d * w.norm_elem, act_bytes=Lf * 2 * T * d * ACT_BYTES))
    for suffix, d_ff, layers, stack in _mlp_groups(spec):
        if suffix == "_exps":
            Lm = len(layers)
            after.append(Op("MoE router", Role.ROUTER, Scope.MOE, "tensor", Lm, layers=(layers.start, layers.stop),
                            flops=Lm * 2 * T * d * spec.n_experts, weight_bytes=w.by_role["ffn_gate_inp"],
                            act_bytes=Lm * T * (d + spec.n_experts) * ACT_BYTES))
            touched = expected_experts(spec.n_experts, spec.n_active_experts, T)
            after.extend(_mlp_ops(spec, w, suffix, d_ff, layers, T * spec.n_active_experts, touched / spec.n_experts,
                                  pairs_per_expert=T * spec.n_active_experts / touched, experts_touched=touched))
        else:
            after.extend(_mlp_ops(spec, w, suffix, d_ff, layers, T, 1.0))
    after.append(Op("residual add (FFN)", Role.FFN_RESIDUAL, Scope.DENSE, "vector", Lf, layers=(0, Lf),
                    flops=Lf * T * d, act_bytes=Lf * 3 * T * d * ACT_BYTES))
    after.extend(streams[1] + streams[2])

    # -- head ----------------------------------------------------------------------------------
    rows_out = T if logits_all else B
    after.append(Op("final norm", Role.FINAL_NORM, Scope.HEAD, "vector", 1, flops=NORM_FLOPS_PER_ELEMENT * d * rows_out,
                    weight_bytes=d * w.final_norm_elem, act_bytes=2 * rows_out * d * ACT_BYTES))
    after.append(Op("LM head", Role.LM_HEAD, Scope.HEAD, "tensor", 1, flops=2 * rows_out * d * spec.vocab_size,
                    weight_bytes=w.by_role["lm_head"], act_bytes=rows_out * (d + spec.vocab_size) * ACT_BYTES))
    after.append(Op("sampling (logits to CPU)", Role.SAMPLE, Scope.HEAD, "cpu", 1,
                    flops=SAMPLE_FLOPS_PER_LOGIT * B * spec.vocab_size, act_bytes=B * spec.vocab_size * 4))
    return tuple(before), tuple(after)


# Kernels of Gemma 3n's extra graph nodes, counted from llama.cpp src/models/gemma3n.cpp (llama-cpp-python 0.3.36;
# views, reshapes and permutes launch nothing; an RMSNorm with a weight is rms_norm + mul):
PLE_GATHER_KERNELS = 2      # get_rows + scale of the table rows
PLE_PROJECTION_KERNELS = 7  # mul_mat, scale, rms_norm, mul, add (the table rows), scale, cont
ALTUP_EXPAND_KERNELS = 11   # two magnitudes (sqr, sum_rows, sqrt), repeat, mul_mat, mul, div, concat
ALTUP_LAYER_KERNELS = 22    # predict: router (rms_norm, mul, scale, mul_mat, tanh), mul_mat, cont, mul_mat, cont, add;
#                             correct: router (5), sub, mul_mat, scale_bias, cont, repeat, mul, add
LAUREL_KERNELS = 7          # mul_mat, mul_mat, rms_norm, mul, add; and the (attention + LAuReL) add, scale
PLE_LAYER_KERNELS = 9       # mul (scale), mul_mat (gate), gelu, mul (this layer's input), mul_mat, rms_norm, mul,
#                             add (to the other streams), concat
SPARSITY_KERNELS = 10       # Gaussian top-k: mean, sub, sqr, sum_rows, scale, sqrt, scale, add, sub, relu
ALTUP_MERGE_FIXED_KERNELS = 9   # two magnitudes, mul_mat, mul, div, scale; and one add per extra stream


def _per_layer_ops(spec, w: WeightLedger, T: int) -> tuple:
    """Gemma 3n's per-layer inputs, AltUp and LAuReL (llama.cpp gemma3n.cpp): (before the layers, in every layer,
    after them). The n AltUp streams are n copies of the hidden state that every layer reads and writes several
    times (counted as activation traffic: ~15 n d + 18 d values per token and layer, from the graph); the layers
    that keep their FFN gate's top activations add a Gaussian top-k over the gate. Weights: ``per_layer_stream_tensors``."""
    d, L, P, n, r = spec.d_model, spec.n_layers, spec.ple_dim, spec.altup_inputs, spec.laurel_rank
    span, b, A = (0, L), w.by_role, ACT_BYTES
    before = (
        Op("per-layer input gather", Role.EMBED, Scope.INPUT, "memory", 1, kernels=PLE_GATHER_KERNELS,
           weight_bytes=min(T, spec.ple_vocab) * b["per_layer_token_embd"], act_bytes=T * L * P * A),
        Op("per-layer input projection", Role.PER_LAYER, Scope.INPUT, "tensor", 1, kernels=PLE_PROJECTION_KERNELS,
           flops=2 * T * d * L * P, weight_bytes=b["per_layer_model_proj"], act_bytes=T * (d + 5 * L * P) * A),
        Op("AltUp expansion", Role.PER_LAYER, Scope.INPUT, "tensor", 1, kernels=ALTUP_EXPAND_KERNELS,
           flops=2 * T * (n - 1) * d * d, weight_bytes=b["altup_proj"], act_bytes=T * 6 * n * d * A))
    layer = [
        Op("AltUp predict + correct", Role.PER_LAYER, Scope.DENSE, "tensor", L, layers=span,
           kernels=ALTUP_LAYER_KERNELS, flops=L * T * (4 * d * n + 2 * n ** 3 + 2 * n * n + 2 * n * n * d + 2 * n * d),
           weight_bytes=b["altup_router"] + b["altup_predict_coef"] + b["altup_correct_coef"],
           act_bytes=L * T * (15 * n * d + 18 * d) * A),
        Op("LAuReL residual", Role.PER_LAYER, Scope.DENSE, "tensor", L, layers=span, kernels=LAUREL_KERNELS,
           flops=L * T * (4 * d * r + 8 * d), weight_bytes=b["laurel_l"] + b["laurel_r"],
           act_bytes=L * T * (2 * r + 10 * d) * A),
        Op("per-layer input gate", Role.PER_LAYER, Scope.DENSE, "tensor", L, layers=span, kernels=PLE_LAYER_KERNELS,
           flops=L * T * (4 * d * P + 8 * P + 4 * d + (n - 1) * d), weight_bytes=b["inp_gate"] + b["proj"],
           act_bytes=L * T * (6 * d + 6 * P + 5 * n * d) * A)]
    if spec.sparse_ffn_layers:
        Ls = spec.sparse_ffn_layers
        layer.append(Op("FFN gate top-k (activation sparsity)", Role.MLP_ACT, Scope.DENSE, "vector", Ls,
                        layers=(0, Ls), kernels=SPARSITY_KERNELS, flops=Ls * T * spec.d_ff * 8,
                        act_bytes=Ls * T * spec.d_ff * 8 * A))
    after = (Op("AltUp merge", Role.PER_LAYER, Scope.HEAD, "tensor", 1, kernels=ALTUP_MERGE_FIXED_KERNELS + n - 1,
                flops=2 * T * (n - 1) * d * d, weight_bytes=b["altup_unembd_proj"], act_bytes=T * 6 * n * d * A),)
    return before, tuple(layer), after


def attention_core_ops(spec, kv_elem_bytes: float, batch: int, n_tokens: int, depth: float) -> list[Op]:
    """The attention core over the KV cache (full and sliding layers): the only depth-dependent operators.
    FLOPs and KV bytes are linear in ``depth`` (constant past a sliding window)."""
    B, n, L = batch, n_tokens, spec.n_layers
    T = B * n
    key = (spec, kv_elem_bytes)
    shape = _core_shapes.get(key)
    if shape is None:
        if len(_core_shapes) > 256:
            _core_shapes.clear()
        shape = _core_shapes[key] = _core_shape(spec, kv_elem_bytes)
    out = []
    for label, layers, window, kv_per_tok_layer, score_dim, value_dim, act_width, share, writers in shape:
        if window and spec.chunked_attention:
            pairs = _attended_chunked(depth, n, window)
            cached = depth % window             # the chunk so far
        elif spec.index_topk:
            # sparse-indexed: query i attends min(depth + i + 1, topk) keys; the pass reads at most every
            # cached row, and at most topk per query (decode: min(depth + 1, topk))
            pairs = _attended(depth, n, spec.index_topk)
            cached = min(depth + n, n * spec.index_topk) - n
        else:
            pairs = _attended(depth, n, window)     # query-key pairs per sequence per head
            cached = min(depth, window) if window else depth
        flops = layers * B * spec.n_heads * pairs * (2 * score_dim + 2 * value_dim + SOFTMAX_FLOPS_PER_SCORE)
        out.append(Op("attention scores/softmax/values" + label, Role.ATTN_CORE, Scope.DENSE, "tensor", layers,
                      layers=(0, L), flops=flops,
                      kv_read_bytes=layers * B * (cached + n) * kv_per_tok_layer,
                      kv_write_bytes=writers * B * n * kv_per_tok_layer,
                      act_bytes=layers * T * act_width * ACT_BYTES,
                      kernels=ATTENTION_KERNELS, query_heads_per_kv=share,
                      kv_row_bytes=layers * B * pairs * share * kv_per_tok_layer, score_dim=score_dim))
    if spec.index_topk:
        out.append(_indexer_op(spec, B, n, depth))
    return out


def _indexer_op(spec, B, n, depth) -> Op:
    """The lightning indexer over the whole cache (DeepSeek Sparse Attention): every query scores every cached
    key with ``index_n_heads`` dot products of ``index_head_dim``, a ReLU and a weighted sum over the heads
    (2·H·D + 3·H FLOPs per pair), then keeps the top ``index_topk`` (selection not counted). Its keys are read
    once per pass (one key shared by the indexer heads) at ``index_key_bytes`` (FP8 + scale), whatever the KV
    dtype; the new tokens' keys are written."""
    La, H, D = spec.n_attn_layers, spec.index_n_heads, spec.index_head_dim
    kb = spec.index_key_bytes
    return Op("sparse-attention indexer scores (all cached keys)", Role.ATTN_CORE, Scope.DENSE, "tensor", La,
              layers=(0, spec.n_layers), flops=La * B * _attended(depth, n, 0) * (2 * H * D + 3 * H),
              kv_read_bytes=La * B * (depth + n) * kb, kv_write_bytes=La * B * n * kb,
              act_bytes=La * B * n * (H * D + H) * ACT_BYTES, kernels=ATTENTION_KERNELS)


_core_shapes: dict = {}


def _core_shape(spec, kv_elem_bytes):
    """Per-model constants of the attention core, per group of full and sliding layers: (label, layers,
    window, KV bytes per token-layer, score and value widths, activation width, query heads per K/V head, layers
    that write their own cache: a layer that reuses an earlier layer's reads that cache and writes none).
    Full-attention layers with their own head shape (Gemma 4) use it; with K = V one cached vector per
    KV head serves as key and value."""
    kv_per_tok_layer = spec.kv_elements_per_token_layer * kv_elem_bytes
    if spec.is_mla:
        # absorbed MLA decode: scores over (kv_lora + rope) dims, values over kv_lora dims, per head
        score_dim, value_dim = spec.kv_lora_rank + spec.qk_rope_head_dim, spec.kv_lora_rank
    else:
        score_dim, value_dim = spec.head_dim, spec.head_dim
    share = 1.0 if spec.is_mla else spec.n_heads / spec.n_kv_heads   # MLA: the latent is read once (see Op)
    act_width = spec.q_dim + spec.attn_out_dim
    full = (kv_per_tok_layer, score_dim, value_dim, act_width, share)
    if spec.has_global_shape:
        hd = spec.full_head_dim
        full = (spec.kv_elements_per_token_full_layer * kv_elem_bytes, hd, hd, 2 * spec.n_heads * hd,
                spec.n_heads / spec.full_kv_heads)
    windowed = " (chunked)" if spec.chunked_attention else " (sliding window)"
    return tuple(g for g in (("", spec.n_full_layers, 0, *full, spec.n_full_cached),
                             (windowed, spec.n_sliding_layers, spec.sliding_window, kv_per_tok_layer, score_dim,
                              value_dim, act_width, share, spec.n_sliding_cached)) if g[1])


def _linear_mixer_ops(spec, w: WeightLedger, B, T) -> list[Op]:
    """A hybrid model's linear-attention / state-space layers: input and output projections (matmuls
    over the weights) and the scan, which reads and writes each sequence's fixed-size state once per
    pass (conv tail + recurrent matrix, F32) whatever the context, and does ``state_flops_per_token_layer``
    per token. The state traffic is counted as activation bytes: it is no KV cache and does not grow."""
    d, n = spec.d_model, spec.n_linear_layers
    span = (0, spec.n_layers)
    proj = Op("linear-attention/SSM in+out projections", Role.LINEAR_PROJ, Scope.DENSE, "tensor", n, layers=span,
              flops=n * 2 * T * d * (spec.linear_in_rows + spec.linear_value_dim), weight_bytes=w.by_role["ssm"],
              act_bytes=n * T * (d + spec.linear_in_rows + spec.linear_value_dim + d) * ACT_BYTES)
    state = n * B * spec.state_elements_per_layer * STATE_BYTES
    rule = spec.linear_kind + ("_chunk" if spec.linear_kind == "gated_deltanet" and T > B else "")
    gates = (2 if spec.linear_kind == "gated_deltanet" else 1) * spec.linear_v_heads    # beta and decay | dt
    tok = n * T * STATE_BYTES
    scan = Op("conv + recurrent state update", Role.STATE_SCAN, Scope.DENSE, "vector", n, layers=span,
              flops=n * T * spec.state_flops_per_token_layer, act_bytes=2 * state, kernels=STATE_SCAN_KERNELS,
              state_bytes=state, state_rule=rule, conv_io_bytes=tok * 2 * spec.linear_conv_dim,
              rule_io_bytes=tok * (spec.linear_conv_dim + gates + spec.linear_value_dim))
    return [proj, scan]


def _mlp_ops(spec, w: WeightLedger, suffix, d_ff, layers, tokens, fraction_read, pairs_per_expert: float = 0.0,
             experts_touched: float = 0.0):
    """gate/up/down and activation of a (gated) MLP over ``layers``: dense (suffix ""), routed experts
    (``_exps``: the stack of all experts, ``fraction_read`` of it read) or shared experts (``_shexp``).
    ``tokens``: token-rows computed; ``pairs_per_expert``, ``experts_touched``: see ``Op``."""
    role_mm, role_act = _MLP_ROLES[suffix]
    scope = Scope.DENSE if suffix == "" else Scope.MOE
    span = (layers.start, layers.stop)
    n = len(layers)
    out = []
    for role, rows, cols in _mlp_shapes(spec, d_ff):
        out.append(Op(f"{role}{suffix} projection", role_mm, scope, "tensor", n, layers=span,
                      flops=2 * tokens * rows * cols * n, weight_bytes=w.by_role[role + suffix] * fraction_read,
                      act_bytes=n * tokens * (rows + cols) * ACT_BYTES, pairs_per_expert=pairs_per_expert,
                      experts_touched=experts_touched, out_rows=rows if experts_touched else 0))
    out.append(Op(f"activation{suffix} ({'SwiGLU' if spec.gated_mlp else 'GELU'})", role_act, scope, "vector", n,
                  layers=span, flops=n * tokens * d_ff * ACTIVATION_FLOPS_PER_ELEMENT,
                  act_bytes=n * 3 * tokens * d_ff * ACT_BYTES))
    return out


_MLP_ROLES = {"": (Role.MLP, Role.MLP_ACT), "_exps": (Role.EXPERTS, Role.EXPERTS_ACT),
              "_shexp": (Role.SHARED_EXPERTS, Role.SHARED_ACT)}


def resident_weight_bytes(spec, storage) -> float:
    """Bytes of every weight held in memory (the whole embedding table, every expert, norms, biases)."""
    return weight_ledger(spec, storage).resident
