"""ModelSpec: a decoder-only transformer's shape, validated, with exact parameter counts.

Field names follow the Hugging Face config where one exists. Everything that can be derived
(head_dim from hidden/heads, parameter counts by component, KV bytes per token) is derived here
and nowhere else.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from ..derived import hash_once
from ..errors import UserError
from ..guard.limits import check_shape

USES = ("chat", "code", "reasoning")
LINEAR_KINDS = ("gated_deltanet", "mamba2")


@hash_once
@dataclass(frozen=True)
class ModelSpec:
    id: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int                       # dense FFN intermediate size (0 if every layer is MoE)
    vocab_size: int
    head_dim: int = 0               # 0 -> d_model // n_heads
    name: str = ""
    family: str = "llama"           # HF model_type
    gated_mlp: bool = True          # SwiGLU/GeGLU (gate, up, down) vs plain (up, down)
    tied_embeddings: bool = False
    norm: str = "rmsnorm"           # rmsnorm | layernorm (layernorm has a bias)
    norms_per_layer: int = 2        # 1 for parallel blocks (GPT-J, Phi-2), 4 for Gemma 2/3 sandwich norms
    parallel_block: bool = False    # attention and MLP read the same normed input (GPT-J, Phi-2)
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    lm_head_bias: bool = False
    qk_norm: bool = False           # per-head RMSNorm on q and k (Qwen3, Gemma 3)
    attn_sinks: bool = False        # one learned logit per head (gpt-oss)
    rope_theta: float = 10000.0
    rotary_dim: int = 0             # 0 -> whole head (partial rotary: GPT-J 64, Phi-2 32)
    max_context: int = 4096
    sliding_window: int = 0         # tokens a sliding-window layer attends to (0 = none)
    n_sliding_layers: int = 0       # how many layers use the sliding window
    # Mixture of experts
    n_experts: int = 0
    n_active_experts: int = 0
    n_shared_experts: int = 0
    d_ff_expert: int = 0
    d_ff_shared: int = 0            # 0 -> d_ff_expert
    n_dense_layers: int = 0         # leading layers with a dense FFN (DeepSeek-V3: 3)
    router_bias: bool = False
    expert_bias: bool = False
    shared_expert_gate: bool = False  # Qwen2-MoE: sigmoid gate d_model -> 1 on the shared expert
    # Multi-head latent attention (DeepSeek-V2/V3)
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Hybrid models: layers whose token mixer keeps a fixed-size state instead of a KV cache
    n_linear_layers: int = 0        # how many layers use the linear-attention / state-space mixer
    linear_kind: str = ""           # gated_deltanet (Qwen3-Next) | mamba2 (Granite 4.0-H)
    linear_k_heads: int = 0         # gated_deltanet: key heads; mamba2: n_groups (B/C groups)
    linear_k_dim: int = 0           # gated_deltanet: key head dim; mamba2: ssm_state_size
    linear_v_heads: int = 0         # gated_deltanet: value heads; mamba2: mamba heads
    linear_v_dim: int = 0           # gated_deltanet: value head dim; mamba2: mamba head dim
    linear_conv_kernel: int = 0     # causal depthwise conv width before the recurrence
    attn_output_gate: bool = False  # q_proj also emits a sigmoid output gate per channel (Qwen3-Next)
    chunked_attention: bool = False  # the n_sliding_layers attend within fixed chunks of sliding_window
    #                                  tokens (Llama 4 iRoPE), not a sliding window
    n_ffn_free_layers: int = 0      # layers with a token mixer but no FFN (Nemotron-H: a Mamba block not followed
    #                                 by an MLP/MoE block); counted as the last layers
    # Full-attention (non-sliding) layers with their own head shape (Gemma 4); 0 / False: the same as the others
    global_head_dim: int = 0        # head width of the full-attention layers (Gemma 4: 512)
    global_kv_heads: int = 0        # KV heads of the full-attention layers (Gemma 4 31B: 4)
    global_kv_shared: bool = False  # the full-attention layers reuse keys as values (attention_k_eq_v): one
    #                                 projection and one cached vector per KV head
    # Sparse-indexed attention (DeepSeek Sparse Attention: DeepSeek-V3.2, GLM-5; MLA only): a lightning indexer
    # with its own small heads scores every cached key, each query attends the index_topk best
    index_topk: int = 0             # keys each query attends (2048)
    index_n_heads: int = 0          # indexer heads (V3.2: 64, GLM-5: 32)
    index_head_dim: int = 0         # indexer head width (128); its key cache holds one such key per token-layer
    # Gemma 3n (transformers Gemma3nTextConfig; the gemma3n graph, src/models/gemma3n.cpp): every layer also reads a
    # per-layer input (a row of its own embedding table, gated in after the FFN), keeps AltUp's parallel copies of
    # the hidden state, and adds a low-rank LAuReL residual; the last layers reuse earlier layers' KV cache
    ple_dim: int = 0                # hidden_size_per_layer_input: width of each layer's input (256)
    ple_vocab: int = 0              # vocab_size_per_layer_input: rows of the per-layer table (262,144)
    altup_inputs: int = 0           # altup_num_inputs: copies of the hidden state carried through the layers (4)
    laurel_rank: int = 0            # laurel_rank: rank of the learned residual (64)
    kv_shared_layers: int = 0       # num_kv_shared_layers: the last layers attend an earlier layer's cache (15)
    sparse_ffn_layers: int = 0      # leading layers whose FFN gate keeps its top activations (Gaussian top-k: 10)
    # Provenance
    source: str = ""                # where the numbers come from (HF config repo, paper)
    published_params: float = 0.0   # billions, as the authors state them (for the catalog test)
    published_active_params: float = 0.0
    published_active_excludes_embedding: bool = False  # the authors' active figure leaves out the
    #                                                      input embedding table (gpt-oss model card)
    published_active_excludes_output: bool = False  # ... and the output head too (GLM's A-figures: see
    #                                                 docs/models.md, "How authors count active parameters")
    vision_params: int = 0          # vision encoder + projector stored with the checkpoint (Gemma 3):
    #                                 not part of the text decoder, so not in n_params
    notes: str = ""
    hf_repo: str = ""               # the Hugging Face repository id of the original weights
    source_status: str = ""         # how sure the source is (the model-configs record's ``status``)
    released_format: str = ""       # the --quant name of the released weights ("" = BF16): FP8, MXFP4 ...
    released_format_source: str = ""  # where that is stated (the config's quantization_config)
    record: str = ""                # name of the record in data/model-configs/models.jsonl it came from
    use: tuple = ()                 # what the authors made it for: chat, code, reasoning
    published_params_effective: bool = False  # the authors' figure leaves out the per-layer input parameters
    #                                           (Gemma 3n "E4B": effective parameters; docs/models.md)
    published_params_tol: float = 0.0   # billions: one unit of the last digit the authors stated
    published_active_tol: float = 0.0   # ("12B" -> 1.0, "2.4B" -> 0.1); 0 -> within 0.5 %
    extra: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self):
        def bad(msg):
            raise UserError(f"model {self.id or '?'}: {msg}")


        for f in ("n_layers", "d_model", "n_heads", "n_kv_heads", "vocab_size"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                bad(f"{f} must be a positive integer, got {v!r}")
            check_shape(f, v, f"model {self.id or '?'}")
        for f in ("d_ff", "head_dim", "sliding_window", "n_sliding_layers", "n_experts",
                  "n_active_experts", "n_shared_experts", "d_ff_expert", "d_ff_shared",
                  "n_dense_layers", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                  "qk_nope_head_dim", "v_head_dim", "rotary_dim", "n_linear_layers", "linear_k_heads",
                  "linear_k_dim", "linear_v_heads", "linear_v_dim", "linear_conv_kernel", "n_ffn_free_layers",
                  "global_head_dim", "global_kv_heads", "index_topk", "index_n_heads", "index_head_dim",
                  "ple_dim", "ple_vocab", "altup_inputs", "laurel_rank", "kv_shared_layers", "sparse_ffn_layers"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                bad(f"{f} must be a non-negative integer, got {v!r}")
            check_shape(f, v, f"model {self.id or '?'}")
        for fd in fields(self):     # a flag, a number, a word of its own type: bool("false") is True
            v, d = getattr(self, fd.name), fd.default
            if isinstance(d, bool) and not isinstance(v, bool):
                bad(f"{fd.name} must be true or false, got {v!r}")
            real = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if isinstance(d, float) and not real:
                bad(f"{fd.name} must be a finite number, got {v!r}")
            if isinstance(d, str) and not isinstance(v, str):
                bad(f"{fd.name} must be text, got {v!r}")
        if isinstance(self.use, (list, tuple)):
            object.__setattr__(self, "use", tuple(self.use))
        bad_use = [u for u in self.use if u not in USES] if isinstance(self.use, tuple) else [self.use]
        if bad_use:
            bad(f"use must be a list of {', '.join(USES)}, got {self.use!r}")
        v = self.vision_params
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > 10**12:
            bad(f"vision_params must be a non-negative integer, got {v!r}")
        if self.head_dim == 0:
            if self.d_model % self.n_heads:
                bad(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}; give head_dim")
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        if self.n_heads % self.n_kv_heads:
            bad(f"n_heads {self.n_heads} must be a multiple of n_kv_heads {self.n_kv_heads}")
        if self.norm not in ("rmsnorm", "layernorm"):
            bad(f"norm must be rmsnorm or layernorm, got {self.norm!r}")
        if self.n_sliding_layers > self.n_layers:
            bad("n_sliding_layers exceeds n_layers")
        if self.n_sliding_layers and not self.sliding_window:
            bad("n_sliding_layers given without sliding_window")
        if self.n_experts:
            if not (0 < self.n_active_experts <= self.n_experts):
                bad(f"n_active_experts must be in 1..n_experts ({self.n_experts})")
            if not self.d_ff_expert:
                bad("an MoE model needs d_ff_expert")
            if self.n_dense_layers > self.n_layers:
                bad("n_dense_layers exceeds n_layers")
            if self.n_dense_layers and not self.d_ff:
                bad("dense leading layers need d_ff")
        elif not self.d_ff:
            bad("d_ff must be positive for a dense model")
        if self.n_linear_layers:
            if self.linear_kind not in LINEAR_KINDS:
                bad(f"linear_kind must be one of {', '.join(LINEAR_KINDS)} for n_linear_layers, got {self.linear_kind!r}")
            if not all((self.linear_k_heads, self.linear_k_dim, self.linear_v_heads, self.linear_v_dim,
                        self.linear_conv_kernel)):
                bad("a hybrid model needs linear_k_heads, linear_k_dim, linear_v_heads, linear_v_dim and linear_conv_kernel")
            if self.n_linear_layers + self.n_sliding_layers > self.n_layers:
                bad("n_linear_layers + n_sliding_layers exceeds n_layers")
        elif self.linear_kind:
            bad("linear_kind given without n_linear_layers")
        if self.n_ffn_free_layers and self.n_ffn_free_layers >= self.n_layers - (self.n_dense_layers if self.n_experts else 0):
            bad("n_ffn_free_layers leaves no FFN layer (the mixer-only layers are the last ones)")
        if self.chunked_attention and not self.n_sliding_layers:
            bad("chunked_attention needs n_sliding_layers and sliding_window (the chunk)")
        if not isinstance(self.global_kv_shared, bool):
            bad(f"global_kv_shared must be true or false, got {self.global_kv_shared!r}")
        if self.has_global_shape:
            if self.is_mla or self.n_linear_layers or self.chunked_attention:
                bad("global_head_dim / global_kv_heads / global_kv_shared apply to plain attention with sliding-window "
                    "and full layers only (not MLA, hybrid or chunked models)")
            if self.n_heads % self.full_kv_heads:
                bad(f"n_heads {self.n_heads} must be a multiple of global_kv_heads {self.full_kv_heads}")
        if (self.index_topk or self.index_n_heads or self.index_head_dim) and not (
                self.index_topk and self.index_n_heads and self.index_head_dim and self.is_mla and self.q_lora_rank):
            bad("sparse-indexed attention needs index_topk, index_n_heads and index_head_dim, on MLA with q_lora_rank")
        if self.has_per_layer_streams:
            if not (self.ple_dim and self.ple_vocab and self.altup_inputs >= 2 and self.laurel_rank):
                bad("per-layer inputs (Gemma 3n) need ple_dim, ple_vocab, altup_inputs (>= 2) and laurel_rank")
            if self.is_mla or self.is_moe or self.n_linear_layers or self.chunked_attention or self.has_global_shape:
                bad("per-layer inputs, AltUp and LAuReL apply to dense plain-attention models only (Gemma 3n)")
        if self.kv_shared_layers >= self.n_attn_layers or self.sparse_ffn_layers > self.n_layers:
            bad("kv_shared_layers must leave an attention layer with its own cache; sparse_ffn_layers at most n_layers")
        if self.kv_shared_layers and (self.is_mla or self.n_linear_layers):
            bad("kv_shared_layers applies to plain attention (Gemma 3n), not MLA or hybrid models")
        if self.is_mla and not (self.qk_rope_head_dim and self.qk_nope_head_dim and self.v_head_dim):
            bad("MLA (kv_lora_rank) needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim")

    # ---- derived shape -------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers - self.n_ffn_free_layers if self.is_moe else 0

    @property
    def n_ffn_dense_layers(self) -> int:
        return self.n_dense_layers if self.is_moe else self.n_layers - self.n_ffn_free_layers

    def has_ffn(self, i: int) -> bool:
        """Whether layer i has an FFN: all but the last n_ffn_free_layers."""
        return i < self.n_layers - self.n_ffn_free_layers

    @property
    def q_dim(self) -> int:
        """Width of the query projection output."""
        if self.is_mla:
            return self.n_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.n_heads * self.head_dim

    @property
    def q_proj_rows(self) -> int:
        """Rows of the stored q projection: the queries, and as many gate values with an output gate."""
        return self.q_dim * (2 if self.attn_output_gate else 1)

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) per token per layer for standard attention."""
        return self.n_kv_heads * self.head_dim

    @property
    def attn_out_dim(self) -> int:
        return self.n_heads * (self.v_head_dim if self.is_mla else self.head_dim)

    @property
    def kv_elements_per_token_layer(self) -> int:
        """Values cached per token per layer: K and V, or MLA's compressed latent + rope key."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_dim

    @property
    def n_attn_layers(self) -> int:
        """Layers with softmax attention (and a KV cache); the rest of a hybrid keep a fixed state."""
        return self.n_layers - self.n_linear_layers

    @property
    def n_full_layers(self) -> int:
        return self.n_attn_layers - self.n_sliding_layers

    # ---- full-attention layers with their own head shape (Gemma 4) ----------------------------
    @property
    def has_global_shape(self) -> bool:
        return bool(self.global_head_dim or self.global_kv_heads or self.global_kv_shared)

    @property
    def full_head_dim(self) -> int:
        return self.global_head_dim or self.head_dim

    @property
    def full_kv_heads(self) -> int:
        return self.global_kv_heads or self.n_kv_heads

    @property
    def kv_elements_per_token_full_layer(self) -> int:
        """Values cached per token on a full-attention layer: K and V, or K alone when K = V."""
        if not self.has_global_shape:
            return self.kv_elements_per_token_layer
        return (1 if self.global_kv_shared else 2) * self.full_kv_heads * self.full_head_dim

    def is_full_layer(self, i: int) -> bool:
        """Whether layer i is a full-attention layer of a model with sliding layers: spread evenly, the last
        one last (Gemma 4: every 6th, 5, 11, ..., 59)."""
        F, L = self.n_full_layers, self.n_layers
        return (i + 1) * F // L != i * F // L

    def kv_cached_elements(self, context: int) -> int:
        """Values held in one sequence's KV cache at a context length, over all layers (sliding layers
        cap at the window; full layers with their own head shape count theirs)."""
        if not self.has_global_shape:
            return self.kv_cached_tokens(context) * self.kv_elements_per_token_layer
        sliding = min(context, self.sliding_window) if self.sliding_window else context
        return (self.n_full_cached * context * self.kv_elements_per_token_full_layer
                + self.n_sliding_cached * sliding * self.kv_elements_per_token_layer)

    # ---- Gemma 3n: per-layer inputs, AltUp, LAuReL, shared KV -----------------------------------
    @property
    def has_per_layer_streams(self) -> bool:
        return bool(self.ple_dim or self.ple_vocab or self.altup_inputs or self.laurel_rank)

    def has_own_cache(self, i: int) -> bool:
        """Whether layer i computes and caches its own K and V: all but the last ``kv_shared_layers``, which reuse an
        earlier layer's cache (in the gemma3n graph: the last cached layer of the same kind)."""
        return i < self.n_layers - self.kv_shared_layers

    def kv_sharing_counts(self) -> tuple[int, int]:
        """(full, sliding) attention layers among those without a cache of their own (``has_own_cache``)."""
        if not self.kv_shared_layers:
            return 0, 0
        shared = [i for i in range(self.n_layers) if not self.has_own_cache(i)]
        full = sum(1 for i in shared if self.is_full_layer(i)) if self.n_sliding_layers else self.kv_shared_layers
        return full, self.kv_shared_layers - full

    @property
    def n_full_cached(self) -> int:
        """Full-attention layers holding a KV cache of their own."""
        return self.n_full_layers - self.kv_sharing_counts()[0]

    @property
    def n_sliding_cached(self) -> int:
        """Sliding-window layers holding a KV cache of their own."""
        return self.n_sliding_layers - self.kv_sharing_counts()[1]

    def per_layer_stream_params(self) -> dict[str, int]:
        """Gemma 3n's extra parameters by component (transformers modeling_gemma3n): the per-layer input table
        (ple_vocab x n_layers*ple_dim), its projection from the hidden state and norm, and per layer the input gate
        (d -> ple_dim), projection (ple_dim -> d) and norm; AltUp's (n-1) up and (n-1) down projections (d x d)
        and per layer its router (d -> n), router norm, prediction (n -> n^2) and correction (n -> n)
        coefficients and output scale; LAuReL's per-layer d -> r -> d and norm."""
        if not self.has_per_layer_streams:
            return {}
        d, L, P, n, r = self.d_model, self.n_layers, self.ple_dim, self.altup_inputs, self.laurel_rank
        return {"per_layer_inputs": self.ple_vocab * L * P + d * L * P + P + L * (2 * d * P + d),
                "altup": 2 * (n - 1) * d * d + L * (d * n + d + n ** 3 + n * n + d),
                "laurel": L * (2 * d * r + d)}

    # ---- sparse-indexed attention (DeepSeek Sparse Attention) ------------------------------------
    @property
    def index_key_bytes(self) -> float:
        """Bytes of one cached indexer key: FP8 (e4m3) values and one FP32 scale per 128 (DeepSeek-V3.2's
        inference/model.py Indexer: k_cache float8_e4m3fn, k_scale_cache float32, block_size 128; vLLM's
        indexer cache: 128 + 4 = 132 bytes per token)."""
        return self.index_head_dim + 4 * -(-self.index_head_dim // 128) if self.index_topk else 0

    def index_cache_bytes(self, context: int) -> float:
        """Bytes of one sequence's indexer key cache at a context length: one key per token and layer."""
        return self.n_attn_layers * context * self.index_key_bytes if self.index_topk else 0

    def indexer_params_per_layer(self) -> int:
        """The lightning indexer (DeepSeek-V3.2 inference/model.py Indexer): wq_b (q_lora_rank -> heads x dim),
        wk (d_model -> dim), k_norm (a LayerNorm over dim: weight and bias), weights_proj (d_model -> heads)."""
        if not self.index_topk:
            return 0
        H, D = self.index_n_heads, self.index_head_dim
        return self.q_lora_rank * H * D + self.d_model * D + 2 * D + self.d_model * H

    def kv_cached_tokens(self, context: int) -> int:
        """Token-layers held in the KV cache at a context length (sliding layers cap at the window,
        chunked layers at the chunk; layers that reuse another's cache hold none)."""
        sliding = min(context, self.sliding_window) if self.sliding_window else context
        return self.n_full_cached * context + self.n_sliding_cached * sliding

    def is_linear_layer(self, i: int) -> bool:
        """Whether layer i is a linear/state-space layer: the attention layers are spread evenly,
        the last one last (Qwen3-Next: every 4th layer, 3, 7, ..., 47, attends)."""
        if not self.n_linear_layers:
            return False
        A, L = self.n_attn_layers, self.n_layers
        return (i + 1) * A // L == i * A // L

    # ---- hybrid: the fixed-size state of linear-attention / state-space layers --------------
    @property
    def linear_key_dim(self) -> int:
        return self.linear_k_heads * self.linear_k_dim

    @property
    def linear_value_dim(self) -> int:
        return self.linear_v_heads * self.linear_v_dim

    @property
    def linear_conv_dim(self) -> int:
        """Channels through the causal conv: q and k (B and C for Mamba-2) and v (x)."""
        return 2 * self.linear_key_dim + self.linear_value_dim

    @property
    def linear_in_rows(self) -> int:
        """Output width of the mixer's input projection. Gated DeltaNet: q, k, v, z (output gate) and
        b, a (beta and decay per value head); Mamba-2: z, x, B, C and dt per head."""
        extra = 2 * self.linear_v_heads if self.linear_kind == "gated_deltanet" else self.linear_v_heads
        return 2 * self.linear_key_dim + 2 * self.linear_value_dim + extra

    @property
    def state_elements_per_layer(self) -> int:
        """Values one sequence keeps per linear layer, whatever the context: the conv's last
        (kernel - 1) inputs and the recurrent matrix state (v_heads x k_dim x v_dim)."""
        if not self.n_linear_layers:
            return 0
        return ((self.linear_conv_kernel - 1) * self.linear_conv_dim
                + self.linear_v_heads * self.linear_k_dim * self.linear_v_dim)

    @property
    def state_flops_per_token_layer(self) -> int:
        """Scan FLOPs per token per linear layer: 2 x kernel per conv channel, and per recurrent state
        element 6 (decay, rank-1 update, read-out; Mamba-2) or 8 (Gated DeltaNet also reads S^T k)."""
        if not self.n_linear_layers:
            return 0
        per = 8 if self.linear_kind == "gated_deltanet" else 6
        return (2 * self.linear_conv_kernel * self.linear_conv_dim
                + per * self.linear_v_heads * self.linear_k_dim * self.linear_v_dim)

    def linear_params_per_layer(self) -> int:
        """In/out projections, conv (Mamba-2: with bias), and the small per-head/per-channel vectors:
        Gated DeltaNet dt_bias, A_log (per value head) and the gated RMSNorm (v_dim); Mamba-2 dt_bias,
        A_log, D (per head) and the gated RMSNorm (d_inner)."""
        if not self.n_linear_layers:
            return 0
        conv = self.linear_conv_dim * self.linear_conv_kernel
        if self.linear_kind == "gated_deltanet":
            small = 2 * self.linear_v_heads + self.linear_v_dim
        else:
            conv += self.linear_conv_dim
            small = 3 * self.linear_v_heads + self.linear_value_dim
        return self.d_model * self.linear_in_rows + conv + small + self.linear_value_dim * self.d_model

    # ---- parameter counts ----------------------------------------------------------------
    def _norm_params(self, width: int) -> int:
        return width * (2 if self.norm == "layernorm" else 1)

    def attention_params_per_layer(self, full: bool = False) -> int:
        """One attention layer's parameters; ``full``: a full-attention layer with its own head shape."""
        d = self.d_model
        if self.is_mla:
            qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = d * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.n_heads * qk_head
            else:
                q = d * self.n_heads * qk_head
            kv = (d * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim))
            o = self.attn_out_dim * d
            return q + kv + o + self.indexer_params_per_layer()
        hd = self.full_head_dim if full else self.head_dim
        q_dim, kv_dim = self.n_heads * hd, (self.full_kv_heads if full else self.n_kv_heads) * hd
        kv_mats = 1 if full and self.global_kv_shared else 2
        p = d * q_dim * (2 if self.attn_output_gate else 1) + kv_mats * d * kv_dim + q_dim * d
        if self.qkv_bias:
            p += q_dim + kv_mats * kv_dim
        if self.o_bias:
            p += d
        if self.qk_norm:
            p += 2 * hd
        if self.attn_sinks:
            p += self.n_heads
        return p

    def mlp_params(self, d_ff: int) -> int:
        d = self.d_model
        p = (3 if self.gated_mlp else 2) * d * d_ff
        if self.mlp_bias:
            p += (2 * d_ff if self.gated_mlp else d_ff) + d
        return p

    def expert_params(self) -> int:
        """One routed expert."""
        p = (3 if self.gated_mlp else 2) * self.d_model * self.d_ff_expert
        if self.expert_bias:
            p += (2 * self.d_ff_expert if self.gated_mlp else self.d_ff_expert) + self.d_model
        return p

    def shared_expert_params(self) -> int:
        return self.n_shared_experts * self.mlp_params(self.d_ff_shared or self.d_ff_expert)

    def router_params(self) -> int:
        p = self.d_model * self.n_experts + (self.n_experts if self.router_bias else 0)
        if self.shared_expert_gate:
            p += self.d_model
        return p

    def param_counts(self) -> dict[str, int]:
        """Exact parameters by component (whole model)."""
        L = self.n_layers
        counts = {
            "embedding": self.vocab_size * self.d_model,
            "attention": self.n_sliding_layers * self.attention_params_per_layer()
            + self.n_full_layers * self.attention_params_per_layer(full=True),
            "linear_mixer": self.n_linear_layers * self.linear_params_per_layer(),
            "ffn_dense": self.n_ffn_dense_layers * self.mlp_params(self.d_ff) if self.d_ff else 0,
            "moe_experts": self.n_moe_layers * self.n_experts * self.expert_params(),
            "moe_shared": self.n_moe_layers * self.shared_expert_params(),
            "router": self.n_moe_layers * self.router_params() if self.is_moe else 0,
            "norms": (L * self.norms_per_layer - self.n_ffn_free_layers + 1) * self._norm_params(self.d_model),
            "lm_head": 0 if self.tied_embeddings else self.vocab_size * self.d_model
            + (self.vocab_size if self.lm_head_bias else 0),
        }
        counts.update(self.per_layer_stream_params())
        return counts

    @property
    def n_params(self) -> int:
        return sum(self.param_counts().values())

    @property
    def n_active_params(self) -> int:
        """Parameters used by one token (all but the routed experts it does not visit)."""
        if not self.is_moe:
            return self.n_params
        idle = self.n_moe_layers * (self.n_experts - self.n_active_experts) * self.expert_params()
        return self.n_params - idle

    # ---- constructors --------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict) -> "ModelSpec":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"model {data.get('id', '?')}: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("extra", None)
        d["use"] = list(self.use)
        return d
