"""MoE dispatch: the kernels an engine launches per MoE layer that the operator ledger does not list.

The ledger counts, per MoE layer, the router matmul, the three expert matmuls (one ``mul_mat_id`` each: at one token
every llama.cpp backend runs them as one matrix-vector launch over the selected experts -- ggml-cuda/HIP
``mul_mat_vec_q`` with ids, ggml-vulkan ``mul_mat_vec_id``, ggml-sycl ``mul_mat_id_mmvq_fused``) and the activation.
What ggml's graph adds around them (llama.cpp ``src/llama-graph.cpp``, ``build_moe_ffn``, read in the copy vendored by
llama-cpp-python 0.3.36):

- selection: the gating function (``ggml_soft_max`` or ``ggml_sigmoid``), the top-k (``ggml_argsort_top_k``) and the
  weights of the chosen experts (``ggml_get_rows``): 3 kernels;
- normalisation of those weights (``ggml_sum_rows``, ``ggml_clamp``, ``ggml_div``; models with ``norm_w``, the usual
  case for top-k > 1): 3 kernels;
- weighting of the experts' outputs (``ggml_mul``): 1 kernel;
- the sum over the k selected experts' outputs: ``k - 1`` ``ggml_add`` nodes.

That is ``per_moe_layer`` = 7 plus ``per_moe_expert_used`` = 1 per selected expert beyond the first (capabilities.toml
``kernels`` of each llama.cpp backend): 14 per layer for Qwen3-30B-A3B (k = 8), 48 layers: 672 launches a token, ~2.7
ms at 4 us per kernel, next to ~3.5 ms of weight reads on an RTX 4090. Vendor engines list their own
(``per_moe_layer`` of vLLM's fused_moe: 4).

Later builds run that dispatch as fewer kernels (``MOE_FUSIONS``, by the graph a backend's ``kernels.moe_fusion``
names; read in llama-cpp-python 0.3.17's copy of 2026-03, absent from 0.3.16's of 2025-08):

- ggml-cuda, and so its HIP build (``ggml-cuda.cu`` graph evaluation, ``topk-moe.cu``): ``ggml_cuda_op_topk_moe``
  runs the gating, top-k, get_rows and the weight normalisation as one kernel where the expert count is a power of
  two up to 512, or 576 (``ggml_cuda_should_use_topk_moe``); ``ggml_cuda_op_fused_add`` sums a chain of up to 8 adds
  in one kernel. The weighting ``mul`` stays a kernel of its own.
- ggml-vulkan (``ggml_vk_build_graph``'s fusions): ``topk_moe.comp`` likewise for up to 512 experts
  (``ggml_vk_can_fuse_topk_moe``); ``multi_add.comp`` up to ``MAX_FUSED_ADDS`` = 9 adds (where the device has
  ``shaderRoundingModeRTEFloat16``: ASSUMED of the drivers in drivers.toml); and the weighting rides on the down
  projection's matrix-vector kernel (``MUL_MAT_ID_MUL``, at most 8 tokens: ``ggml_vk_use_mul_mat_vec_id``; counted at
  every token count: over a prompt the one kernel it saves is nothing against the GEMMs).

Qwen3-30B-A3B at one token: 14 kernels a layer -> 3 under ggml-cuda, 2 under ggml-vulkan. CUDA and ROCm name
ggml-cuda's; the Vulkan engine names none: with its fusions counted, the Arc Pro B70's MoE rows, already predicted
fast for a cost of their own that nothing here models, went further off than the R9700's came closer
(docs/calibration.md, "Landed ... fused MoE dispatch"). ggml-metal and ggml-sycl are not read for this and keep the
graph's count; a build before ``MOE_FUSED_SINCE`` keeps it too. Not counted: ggml-cuda's later fusion of the
weighting mul with the adds (in 0.3.36's copy, not 0.3.35's of 2026-08).

How a backend runs ``mul_mat_id`` over a prompt is below ``dispatch_kernels``: ggml-sycl's host loop over the
experts (``expert_loop_kernels``; its F16 copy of quantized weights: ``engines.weight_copy``), and ggml-cuda's (HIP)
host loop for float experts MMF declines. How each expert's GEMM ramps over its own tokens: ``rates.matmul_eff``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cpu_kernels import before
from .rates import MATVEC_MAX_TOKENS

SELECTION_KERNELS = 6      # of per_moe_layer: gating, top-k, get_rows and the normalisation's three (the 7th: the mul)
# ASSUMED: the fusions below are in 0.3.17's copy (2026-03) and not in 0.3.16's (2025-08); the month between is not
# pinned by a copy. Every calibration row of a llama.cpp GPU backend and an MoE model is of 2025-08 or earlier (CUDA,
# Metal, ROCm on the MI50) or of 2025-12 and later (the R9700 pair's build b7423, the Arc Pro B70's b9039).
MOE_FUSED_SINCE = "2025-10"


@dataclass(frozen=True)
class MoeFusion:
    """How a graph runs the MoE dispatch once fused (module docstring): the expert counts its top-k kernel takes
    (up to ``topk_max_experts``; powers of two only where ``topk_pow2``, or one of ``topk_also``), the adds one kernel
    sums, and whether the weighting rides on the down projection's kernel."""
    topk_max_experts: int
    topk_pow2: bool
    adds_per_kernel: int
    weighting_fused: bool
    topk_also: tuple = ()

    def fuses_topk(self, n_experts: int) -> bool:
        if n_experts in self.topk_also:
            return True
        pow2 = n_experts > 0 and n_experts & (n_experts - 1) == 0
        return 0 < n_experts <= self.topk_max_experts and (pow2 or not self.topk_pow2)


MOE_FUSIONS = {"ggml-cuda": MoeFusion(512, True, 8, False, (576,)), "ggml-vulkan": MoeFusion(512, False, 9, True)}


def _fusion(kernels: dict, month: str) -> MoeFusion | None:
    """The fused dispatch of the graph an engine's ``kernels`` table names, where the build of ``month`` has it."""
    fusion = MOE_FUSIONS.get(kernels.get("moe_fusion", ""))
    return None if fusion is None or before(month, MOE_FUSED_SINCE) else fusion


def dispatch_kernels(kernels: dict, spec, month: str = "") -> int:
    """Launches per forward pass for MoE dispatch under an engine's ``kernels`` table (capabilities.toml) in the
    build of ``month`` ("" = today's): the graph's count, or fewer where the table's ``moe_fusion`` names a graph of
    ``MOE_FUSIONS`` and the build has its fusions (``MOE_FUSED_SINCE``)."""
    if spec is None or not getattr(spec, "n_moe_layers", 0):
        return 0
    per_layer = kernels.get("per_moe_layer", 0)
    adds = kernels.get("per_moe_expert_used", 0) * max(getattr(spec, "n_active_experts", 1) - 1, 0)
    fusion = _fusion(kernels, month)
    if fusion is not None and per_layer > SELECTION_KERNELS:
        if fusion.fuses_topk(getattr(spec, "n_experts", 0)):
            per_layer -= SELECTION_KERNELS - 1
        per_layer -= 1 if fusion.weighting_fused else 0
        adds = math.ceil(adds / fusion.adds_per_kernel)
    return int((per_layer + adds) * spec.n_moe_layers)


def dispatch_how(kernels: dict, spec, month: str = "") -> str:
    """``explain``'s words for ``dispatch_kernels``: the launches a MoE layer's dispatch costs and whether they are
    the graph's own or its fused form; "" for a dense model or an engine that adds none."""
    n = dispatch_kernels(kernels, spec, month)
    if not n:
        return ""
    how = (f"{kernels['moe_fusion']}'s fused top-k and adds (builds from {MOE_FUSED_SINCE})"
           if _fusion(kernels, month) else "as ggml's graph lists them")
    return f"MoE dispatch {n / spec.n_moe_layers:g} a layer, {how}"


# -- an engine whose multi-token mul_mat_id loops over the experts on the host (ggml-sycl) --------------------------
#
# ggml-sycl (``ggml-sycl.cpp``, ``ggml_sycl_mul_mat_id``; llama.cpp as vendored by llama-cpp-python 0.3.36): one
# token goes to the fused ``ggml_sycl_mul_mat_id_mmvq_fused``; more tokens (``ne12 > 1``) copy the expert ids to the
# host and wait for the queue, copy a row map back, gather the rows (``k_copy_src1_to_contiguous``), then call
# ``ggml_sycl_mul_mat`` once per expert that has rows, and scatter (``k_copy_dst_from_contiguous``):
# ``EXPERT_LOOP_CALL_KERNELS`` = 5 launches per call (the wait counted as one) plus, per touched expert, those of
# ``ggml_sycl_mul_mat`` -- for more than 8 rows ``ggml_sycl_op_mul_mat_sycl``: dequantise the expert to F16
# (``to_fp16_sycl`` on src0), convert its rows to F16 (on src1), the oneDNN/oneMKL GEMM: 3
# (priors.toml ``expert_loop_kernels``; its MMQ is off, ``ggml_sycl_supports_mmq`` returns false). That F16 copy's
# bytes, which every quantized prompt matmul pays, dense or expert: ``engines.weight_copy``.
#
# ggml-cuda, and so the HIP build (``ggml-cuda.cu``, ``ggml_cuda_mul_mat_id``), takes the same host loop for float
# (F16/BF16) experts where neither its matrix-vector kernels (at most ``MMVQ_MAX_BATCH_SIZE`` = 8 tokens) nor MMF
# take them: ``ggml_cuda_should_use_mmf(..., mul_mat_id=true)`` declines an expert matrix of at most
# ``MMF_ID_ROWS`` = 1,024 output rows above 512 tokens and a larger one above 128 (mmf.cu). Each expert then goes
# through ``ggml_cuda_mul_mat_cublas``: its rows converted to the compute type, the GEMM, the result converted
# back: 3 launches (priors.toml ``expert_loop = "float-no-mmf"``; quantized experts take MMQ, one launch).
EXPERT_LOOP_CALL_KERNELS = 5
MMF_ID_ROWS = 1024
MMF_ID_MAX_TOKENS = {True: 512, False: 128}     # expert matrix of at most MMF_ID_ROWS rows: 512, else 128


def expert_loop_kernels(engine, op, tokens: int, quantized: bool = True) -> float:
    """Launches of the routed-expert matmul ``op`` (weights ``quantized`` or float) in a pass of ``tokens`` tokens
    under an engine that loops over the touched experts on the host (``engine.expert_loop_kernels`` per expert,
    ``EXPERT_LOOP_CALL_KERNELS`` per call), over its ``op.count`` layers, when its ``expert_loop`` rule says the
    loop runs: ``multi-token`` (ggml-sycl: more than one token), ``float-no-mmf`` (ggml-cuda/HIP: float weights,
    more than 8 tokens, MMF declining the shape); 0 otherwise."""
    per_expert = getattr(engine, "expert_loop_kernels", 0.0)
    if not (per_expert and op.experts_touched and tokens > 1):
        return 0.0
    rule = getattr(engine, "expert_loop", "")
    if rule == "float-no-mmf":
        if quantized or tokens <= MATVEC_MAX_TOKENS or tokens <= MMF_ID_MAX_TOKENS[op.out_rows <= MMF_ID_ROWS]:
            return 0.0
    elif rule != "multi-token":
        return 0.0
    return (per_expert * op.experts_touched + EXPERT_LOOP_CALL_KERNELS) * op.count
