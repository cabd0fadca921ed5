"""MoE dispatch kernels once ggml's graph fuses them (tokspeed/engines/moe_dispatch.py: MOE_FUSIONS), counted by hand
from the fusions read in llama-cpp-python 0.3.17's ggml-cuda.cu / topk-moe.cu and ggml-vulkan.cpp."""

from dataclasses import replace

import pytest

from tokspeed.engines.compat import unmodelled_kernels
from tokspeed.engines.moe_dispatch import MOE_FUSED_SINCE, MOE_FUSIONS, dispatch_kernels
from tokspeed.engines.profile import get_engine
from tokspeed.resolve import resolve_model

BEFORE, AFTER = "2025-08", "2026-03"      # the two copies read: 0.3.16's (no fusions) and 0.3.17's
VULKAN_FUSED = {"per_moe_layer": 7, "per_moe_expert_used": 1, "moe_fusion": "ggml-vulkan"}


def _kernels(engine):
    from tokspeed.engines.compat import _table
    return _table()["engine"][engine]["kernels"]


def test_the_fused_month_lies_between_the_copies_read():
    assert BEFORE < MOE_FUSED_SINCE <= AFTER


def test_qwen3_30b_a3b_per_graph():
    spec = resolve_model("qwen3-30b-a3b")[0]
    assert (spec.n_experts, spec.n_active_experts, spec.n_moe_layers) == (128, 8, 48)
    for engine in ("llama.cpp-cuda", "llama.cpp-rocm", "llama.cpp-vulkan", "llama.cpp-metal", "llama.cpp-sycl"):
        # the graph's own: 7 (gating, top-k, get_rows, 3 of normalisation, the weighting mul) + 7 adds, 48 layers
        assert dispatch_kernels(_kernels(engine), spec, BEFORE) == 14 * 48
    # ggml-cuda (and HIP): one top-k kernel for the six selection nodes (128 experts: a power of two), the mul,
    # the 7 adds in one fused add: 3 a layer
    assert dispatch_kernels(_kernels("llama.cpp-cuda"), spec, AFTER) == 3 * 48
    assert dispatch_kernels(_kernels("llama.cpp-rocm"), spec, AFTER) == 3 * 48
    # ggml-vulkan's fusions, where a table names them: the top-k kernel and one multi_add; the mul rides on the down
    # projection's mat-vec: 2 a layer
    assert dispatch_kernels(VULKAN_FUSED, spec, AFTER) == 2 * 48
    # today's build ("") is after the fusions
    assert dispatch_kernels(VULKAN_FUSED, spec, "") == 2 * 48
    assert dispatch_kernels(_kernels("llama.cpp-cuda"), spec, "") == 3 * 48
    # not switched on for Vulkan (the Arc Pro B70's MoE rows: docs/calibration.md), not read for Metal or SYCL: the
    # graph's count in every build
    for engine in ("llama.cpp-vulkan", "llama.cpp-metal", "llama.cpp-sycl"):
        assert dispatch_kernels(_kernels(engine), spec, AFTER) == 14 * 48


@pytest.mark.parametrize("experts, cuda_topk", [(60, False), (64, True), (576, True), (1024, False)])
def test_cuda_top_k_takes_powers_of_two_up_to_512_or_576(experts, cuda_topk):
    # ggml_cuda_should_use_topk_moe: ((n & (n - 1)) != 0 || n > 512) && n != 576 -> not fused
    assert MOE_FUSIONS["ggml-cuda"].fuses_topk(experts) is cuda_topk
    # ggml_vk_can_fuse_topk_moe: n_expert <= 1 << (num_topk_moe_pipelines - 1) = 512, any count
    assert MOE_FUSIONS["ggml-vulkan"].fuses_topk(experts) is (experts <= 512)


def test_an_expert_count_the_top_k_kernel_declines_keeps_the_selection():
    spec = replace(resolve_model("qwen3-30b-a3b")[0], n_experts=60, n_active_experts=4)
    # CUDA: 60 experts -> the six selection nodes stay, the mul, the 3 adds in one kernel: 6 + 1 + 1 = 8
    assert dispatch_kernels(_kernels("llama.cpp-cuda"), spec, AFTER) == 8 * 48
    # Vulkan: top-k fused (60 <= 512), mul fused, 3 adds in one: 2
    assert dispatch_kernels(VULKAN_FUSED, spec, AFTER) == 2 * 48


def test_more_adds_than_one_kernel_sums():
    spec = replace(resolve_model("qwen3-30b-a3b")[0], n_active_experts=12)
    # 11 adds: ggml_cuda_op_fused_add sums at most 8 (2 kernels), ggml-vulkan's multi_add at most 9 (2 kernels)
    assert dispatch_kernels(_kernels("llama.cpp-cuda"), spec, AFTER) == (1 + 1 + 2) * 48
    assert dispatch_kernels(VULKAN_FUSED, spec, AFTER) == (1 + 2) * 48


def test_the_engine_build_month_decides():
    spec = resolve_model("gpt-oss-20b")[0]
    assert (spec.n_experts, spec.n_active_experts, spec.n_moe_layers) == (32, 4, 24)
    rocm = get_engine("llama.cpp-rocm")      # the HIP build of ggml-cuda: its fusions
    assert unmodelled_kernels(replace(rocm, build_month=BEFORE), spec, "MXFP4") == (7 + 3) * 24
    # 32 experts: a power of two, so one top-k kernel, the mul, the 3 adds in one: 3 a layer
    assert unmodelled_kernels(replace(rocm, build_month=AFTER), spec, "MXFP4") == 3 * 24
    # the row's month overrides the profile's
    assert unmodelled_kernels(replace(rocm, build_month=AFTER), spec, "MXFP4", BEFORE) == (7 + 3) * 24
    dense = resolve_model("llama-3.1-8b")[0]
    assert unmodelled_kernels(rocm, dense, "Q4_K_M") == 0


def test_explain_says_which_count_it_charges():
    from tokspeed.engines.compat import moe_dispatch_how

    spec = resolve_model("qwen3-30b-a3b")[0]
    cuda = get_engine("llama.cpp-cuda")
    assert moe_dispatch_how(cuda, spec, AFTER) == \
        f"MoE dispatch 3 a layer, ggml-cuda's fused top-k and adds (builds from {MOE_FUSED_SINCE})"
    assert moe_dispatch_how(cuda, spec, BEFORE) == "MoE dispatch 14 a layer, as ggml's graph lists them"
    assert moe_dispatch_how(get_engine("llama.cpp-vulkan"), spec, AFTER) == \
        "MoE dispatch 14 a layer, as ggml's graph lists them"
    assert moe_dispatch_how(cuda, resolve_model("llama-3.1-8b")[0], AFTER) == ""
