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
ms at the CUDA fit's 4 us per kernel, next to ~3.5 ms of weight reads on an RTX 4090. Newer CUDA and Vulkan builds
fuse the selection and normalisation (``topk-moe.cu``, ``topk_moe.comp``) and chains of adds; each era's fitted
``launch_s`` absorbs what its builds fused (a per-build count would need the fusion's build number as data).
Vendor engines list their own (``per_moe_layer`` of vLLM's fused_moe: 4).

How a backend runs ``mul_mat_id`` over a prompt is below ``dispatch_kernels``: ggml-sycl's host loop over the
experts (``expert_loop_kernels``; its F16 copy of quantized weights: ``engines.weight_copy``), and ggml-cuda's (HIP)
host loop for float experts MMF declines. How each expert's GEMM ramps over its own tokens: ``rates.matmul_eff``.
"""

from __future__ import annotations

from .rates import MATVEC_MAX_TOKENS


def dispatch_kernels(kernels: dict, spec) -> int:
    """Launches per forward pass for MoE dispatch under an engine's ``kernels`` table (capabilities.toml)."""
    if spec is None or not getattr(spec, "n_moe_layers", 0):
        return 0
    per_layer = kernels.get("per_moe_layer", 0)
    per_layer += kernels.get("per_moe_expert_used", 0) * max(getattr(spec, "n_active_experts", 1) - 1, 0)
    return int(per_layer * spec.n_moe_layers)


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
