"""Linear mixers in llama.cpp: the kernels its graph launches for one layer of a hybrid model's linear-attention
or state-space mixer beyond the two operators the ledger lists for it (``ledger._linear_mixer_ops``: the in/out
projections, counted as one kernel, and the conv + state update, ``STATE_SCAN_KERNELS``).

Read from the graphs of llama.cpp as vendored by llama-cpp-python 0.3.17 (PyPI 2026-03-23): ``src/models/``
``qwen3next.cpp``, ``qwen35.cpp`` / ``qwen35moe.cpp`` (``build_layer_attn_linear``, ``build_qkvz``,
``build_norm_gated``), ``delta-net-base.cpp``, ``mamba-base.cpp`` (``build_mamba2_layer``) and ``llama-graph.cpp``
(``build_rs``). One token per sequence: views, reshapes, permutes and transposes launch nothing; an RMSNorm and the
multiply by its weight are one launch (the GPU backends fuse the pair); build_rs's clearing and its copy of the
states beyond the batch's are empty views once the cache is warm (no launch), its gather is one.

Gated DeltaNet (Qwen3-Next, Qwen3.5, Qwen3.6), per layer (``GDN_KERNELS``):
- the input gates: sigmoid (beta), add the dt bias, softplus, multiply by A: 4;
- the conv: the cached conv state gathered, concatenated with the new q/k/v, its tail copied back to the cache,
  ``ggml_ssm_conv``, silu: 5; the recurrent state gathered: 1;
- q and k L2-normalised: 2, and repeated to the value heads where the key heads are fewer: 2 -- always in
  Qwen3-Next's graph, in Qwen3.5 / 3.6's only without the fused rule (``qwen35*.cpp``: "need explicit repeat only if
  we are not using the fused GDN");
- the delta rule: ``ggml_gated_delta_net``, one kernel (``build_delta_net_fused``: llama-context.cpp sets
  ``fused_gdn_ar`` wherever the layer's backend runs the op -- CUDA/HIP, Vulkan, Metal, SYCL and the CPU in that
  copy), or in builds before it the 12 of ``build_delta_net_autoregressive`` (scale, exp, mul, mul, sum_rows, sub,
  mul, repeat, mul, add, mul, sum_rows);
- the new state copied to the cache: 1; the gated RMSNorm (norm x weight, silu of z, multiply): 3;
- the matmuls: five for Qwen3.5 / 3.6 (wqkv, wqkv_gate, ssm_beta, ssm_alpha, ssm_out); Qwen3-Next's GGUF has one
  ssm_in, one ssm_beta_alpha and ssm_out (3) and splits the first two with 8 copies (``build_qkvz``'s legacy path:
  cont z, cont_3d q / k / v, two concats; cont b, cont_3d alpha).

Mamba-2 (Nemotron-H, Granite 4.0-H), per layer (``MAMBA2_KERNELS``): the conv state gathered, concatenated, its tail
copied back, ssm_conv, the conv bias added, silu (6); dt made contiguous and its bias added (2); ``ggml_ssm_scan``
(1: build_rs's gather of the state); the state copied back (1); x x D and its add (2); z made contiguous and
``ggml_swiglu_split`` (2); the grouped RMSNorm (1): 15, and two matmuls (ssm_in, ssm_out).

Each launch costs the backend's ``launch_s`` (``compat.unmodelled_kernels`` puts them in the pass's fixed cost). A
prompt pass is counted as one token's graph: the chunked delta rule of builds before the fused op (per chunk of
64 tokens nine more launches, ``build_delta_net_chunking``) and its temporaries are not counted; nor is the CPU
backend's RMSNorm and weight multiply, two graph nodes there (one barrier more a layer).

What the graph moves around the state beyond the ledger's one read and one write (``graph_state_bytes``, timed by
``timing.PassRates`` and the fit's ``calibration.fast`` alike): the gather and the copy back on every build (4
passes), and at one token a sequence before the fused rule the autoregressive rule's state-sized temporaries (12
more). On the R9700 pair's Qwen3-Next-80B decode rows (2025-12 builds) the state is 79 MB a token and those 16 passes
1.26 GB beside ~2 GB of weights: the rows' +23..+34 % (in sample, before this) were most of it.
"""

from __future__ import annotations

from ..ledger import STATE_SCAN_KERNELS
from .cpu_kernels import before

# ggml_gated_delta_net is absent from llama-cpp-python 0.3.16's vendored llama.cpp (PyPI 2025-08-15; so is Qwen3-Next)
# and taken by default in 0.3.17's (2026-03-23): the month of the first copy seen with it (ASSUMED: it may have landed
# in a build up to four months earlier, after Qwen3-Next's unfused graph of late 2025).
GDN_FUSED_SINCE = "2026-03"
LEDGER_KERNELS = 1 + STATE_SCAN_KERNELS      # ledger._linear_mixer_ops: projections (1) and the scan
GDN_KERNELS = {"gates": 4, "conv": 5, "state_gather": 1, "l2_norm": 2, "state_copy": 1, "gated_norm": 3}
GDN_REPEAT = 2                  # q and k repeated to the value heads (linear_k_heads < linear_v_heads)
GDN_RULE = {True: 1, False: 12}     # fused ggml_gated_delta_net | build_delta_net_autoregressive
GDN_SPLIT_MATMULS = 5           # Qwen3.5 / 3.6: wqkv, wqkv_gate, ssm_beta, ssm_alpha, ssm_out
# qwen3next.cpp's graph: ssm_in, ssm_beta_alpha and ssm_out (3 matmuls) and the 8 copies that split the first two's
# outputs; q and k repeated whether or not the rule is fused
LEGACY_GDN_FAMILIES = ("qwen3_next",)
GDN_LEGACY_MATMULS = 3
GDN_LEGACY_SPLIT = 8
MAMBA2_KERNELS = 15
MAMBA2_MATMULS = 2
# ggml-cuda (and so the HIP build) fuses pairs of a GDN layer's launches (ggml-cuda.cu, the ggml_cuda_can_fuse
# checks of 0.3.17's copy): ssm_conv + silu, softplus + the multiply by A, silu(z) + the gated norm's multiply; none
# of a Mamba-2 layer's (its conv bias sits between ssm_conv and silu). Dated as the copy: from GDN_FUSED_SINCE.
GDN_FUSED_PAIRS = {"ggml-cuda": 3}


def layer_kernels(spec, month: str = "", graph: str = "ggml") -> int:
    """Launches of one linear-mixer layer of ``spec`` in llama.cpp's graph at one token, built in ``month``
    ("" = today's build), under the backend ``graph`` (``ggml``, or ``ggml-cuda`` with its fusions); 0 for a model
    without such layers or of a kind not listed."""
    kind = getattr(spec, "linear_kind", "")
    if kind == "mamba2":
        return MAMBA2_KERNELS + MAMBA2_MATMULS
    if kind != "gated_deltanet":
        return 0
    fused = not before(month, GDN_FUSED_SINCE)
    n = sum(GDN_KERNELS.values()) + GDN_RULE[fused] - (GDN_FUSED_PAIRS.get(graph, 0) if fused else 0)
    legacy = spec.family in LEGACY_GDN_FAMILIES
    if spec.linear_k_heads < spec.linear_v_heads and (legacy or not fused):
        n += GDN_REPEAT
    return n + (GDN_LEGACY_MATMULS + GDN_LEGACY_SPLIT if legacy else GDN_SPLIT_MATMULS)


# What llama.cpp's graph moves around a linear mixer's state beyond the rule's own read and write (the ledger's
# ``act_bytes``), read from the copy vendored by llama-cpp-python 0.3.36 (``src/llama-graph.cpp`` build_rs,
# ``src/models/delta-net-base.cpp``, ``mamba-base.cpp``): the cached states are gathered into the batch's tensor
# (``get_rows``: a read and a write of each state) and the new state is copied back into the cache (``ggml_cpy``: a
# read and a write): GRAPH_STATE_PASSES. Before the fused ``ggml_gated_delta_net`` (GDN_FUSED_SINCE) one token a
# sequence takes ``build_delta_net_autoregressive``, whose state-sized nodes read 8 and write 6 states (mul by the
# decay, mul by k, sum_rows; repeat k, mul by d, add; mul by q, sum_rows) where the fused op reads and writes one
# each: UNFUSED_RULE_PASSES more. The chunked rule of a prompt before the fused op is not counted (module docstring).
GRAPH_STATE_PASSES = 4
UNFUSED_RULE_PASSES = 12


def graph_state_bytes(op, graph: str, month: str = "") -> float:
    """Bytes llama.cpp's graph (``graph``: the engine's capabilities ``kernels.linear_mixer``; "" for an engine that
    runs another) moves around the linear-mixer scan ``op`` beyond its ledger bytes, in the build of ``month``
    ("" = today's); 0 for any other operator or engine."""
    if not graph or not getattr(op, "state_bytes", 0.0):
        return 0.0
    passes = GRAPH_STATE_PASSES
    if op.state_rule == "gated_deltanet" and before(month, GDN_FUSED_SINCE):
        passes += UNFUSED_RULE_PASSES
    return passes * op.state_bytes


def mixer_kernels(kernels: dict, spec, month: str = "") -> int:
    """Launches per forward pass beyond the ledger's for the linear-mixer layers of ``spec`` under an engine whose
    capabilities ``kernels`` table names llama.cpp's graph (``linear_mixer = "ggml"``, ``"ggml-cuda"``), built in
    ``month``."""
    graph = kernels.get("linear_mixer", "")
    if graph not in ("ggml", *GDN_FUSED_PAIRS) or spec is None or not getattr(spec, "n_linear_layers", 0):
        return 0
    return max(layer_kernels(spec, month, graph) - LEDGER_KERNELS, 0) * spec.n_linear_layers
