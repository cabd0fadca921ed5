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
"""

from __future__ import annotations


def dispatch_kernels(kernels: dict, spec) -> int:
    """Launches per forward pass for MoE dispatch under an engine's ``kernels`` table (capabilities.toml)."""
    if spec is None or not getattr(spec, "n_moe_layers", 0):
        return 0
    per_layer = kernels.get("per_moe_layer", 0)
    per_layer += kernels.get("per_moe_expert_used", 0) * max(getattr(spec, "n_active_experts", 1) - 1, 0)
    return int(per_layer * spec.n_moe_layers)
