"""Which units a llama.cpp backend's prompt matmuls use (engines/backends.py, from ggml-vulkan's
ggml_vk_khr_cooperative_matrix_support and ggml-cuda's amd_wmma/mfma_available), and MoE dispatch kernels
(engines/moe_dispatch.py, from llama-graph.cpp build_moe_ffn)."""

from dataclasses import replace

from tokspeed.engines.backends import backend_view, uses_matrix_units
from tokspeed.engines.compat import unmodelled_kernels
from tokspeed.hardware.catalog import get_hardware
from tokspeed.resolve import resolve_model


def test_the_units_come_from_matrix_units_and_the_kernel_rule():
    a770 = get_hardware("arc-a770")
    # the catalog says Alchemist exposes cooperative matrix; ggml-vulkan declines it there (one rule, cited)
    assert "coopmat" in a770.matrix_units and a770.arch == "xe-hpg"
    assert uses_matrix_units("llama.cpp-vulkan", a770) is False
    # the same part as Xe2 (the arch field, never the name): ggml-vulkan allows INTEL_XE2
    assert uses_matrix_units("llama.cpp-vulkan", replace(a770, arch="xe2")) is True
    assert uses_matrix_units("llama.cpp-vulkan", replace(a770, name="Intel Arc Pro B70", id="arc-pro-b70")) is False
    # a device's units decide: no coopmat listed (a driver without VK_KHR_cooperative_matrix) -> vector ALUs
    assert uses_matrix_units("llama.cpp-vulkan", replace(a770, arch="xe2", matrix_units=("xmx", "dp4a"))) is False
    # ROCm needs WMMA or MFMA: gfx906 (dp4a only) no, CDNA3 and RDNA4 yes
    assert uses_matrix_units("llama.cpp-rocm", get_hardware("mi50")) is False
    assert uses_matrix_units("llama.cpp-rocm", get_hardware("mi300x")) is True
    assert uses_matrix_units("llama.cpp-rocm", get_hardware("radeon-ai-pro-r9700")) is True
    # SYCL on XMX; a backend of one vendor says nothing of another's part; neither arch nor units: no say
    assert uses_matrix_units("llama.cpp-sycl", get_hardware("arc-pro-b70")) is True
    assert uses_matrix_units("llama.cpp-sycl", get_hardware("rtx-4090")) is None
    unknown = replace(a770, name="Intel GPU", id="x", aliases=(), arch=None, matrix_units=())
    assert uses_matrix_units("llama.cpp-vulkan", unknown) is None


def test_vulkan_on_alchemist_runs_on_the_vector_alus():
    a770 = get_hardware("arc-a770")
    assert uses_matrix_units("llama.cpp-vulkan", a770) is False
    assert uses_matrix_units("llama.cpp-sycl", a770) is True            # oneDNN on XMX
    view = backend_view("llama.cpp-vulkan", a770)
    # packed half precision on the Xe vector engines: 2 x the FP32 figure
    assert view.fp16_tflops == 2 * a770.fp32_tflops < a770.fp16_tflops
    assert backend_view("llama.cpp-vulkan", view) == view                # idempotent
    assert backend_view("llama.cpp-sycl", a770) is a770
    # what explain says runs the prompt's matmuls: the vector ALUs at the packed-half figure, not the XMX it lists
    # (nor matrix cores on an RDNA2 part, which has none); SYCL's oneDNN does run on XMX
    from tokspeed.engines.profile import get_engine
    from tokspeed.engines.rates import matmul_rate
    for name in ("arc-a770", "rx-6800-xt"):
        hw = backend_view("llama.cpp-vulkan", get_hardware(name))
        rate = matmul_rate(hw, get_engine("llama.cpp-vulkan", hw), "Q4_0", 512)
        assert rate.unit == "GPU vector ALUs (packed FP16)" and rate.peak == hw.fp16_tflops * 1e12
    sycl = matmul_rate(a770, get_engine("llama.cpp-sycl", a770), "F16", 512)
    assert sycl.unit == "matrix units (FP16)"


def test_rdna3_and_nvidia_keep_their_matrix_figure():
    for name in ("radeon-pro-w7900", "rtx-4090"):
        hw = get_hardware(name)
        assert backend_view("llama.cpp-vulkan", hw) is hw
        assert backend_view("llama.cpp-rocm", hw) is hw


def test_moe_dispatch_kernels_per_layer():
    spec = resolve_model("qwen3-30b-a3b")[0]
    assert spec.n_active_experts == 8 and spec.n_moe_layers == 48
    # gating, top-k, get_rows, three for the weight normalisation, the weighting mul = 7, and 8 - 1 adds, in a build
    # before the graph fused them (tests/test_moe_fusion.py: after)
    assert unmodelled_kernels("llama.cpp-cuda", spec, "Q4_K_M", "2025-08") == (7 + 7) * 48
    dense = resolve_model("llama-3.1-8b")[0]
    assert unmodelled_kernels("llama.cpp-cuda", dense, "Q4_K_M") == 0


def test_rocm_mmq_on_sdot4_where_a_part_has_no_mfma_or_wmma():
    from tokspeed.engines.profile import get_engine
    from tokspeed.engines.rates import matmul_rate

    rocm = get_engine("llama.cpp-rocm")
    mi50 = backend_view("llama.cpp-rocm", get_hardware("mi50"))        # gfx906: dp4a only
    assert mi50.arch == "gcn5" and mi50.matrix_units == ("dp4a",)
    # ggml_cuda_should_use_mmq: not CDNA -> MMQ at any batch; ggml_cuda_dp4a: __builtin_amdgcn_sdot4 on gfx906,
    # 4 int8 products (8 ops) per lane and clock where an FMA is 2: 4 x the FP32 figure
    rate = matmul_rate(mi50, rocm, "Q4_0", 512)
    assert rate.kernel == "dp4a" and rate.listed == "DP4A"
    assert rate.peak == 4 * mi50.fp32_tflops * 1e12
    assert rate.unit == "GPU vector ALUs (DP4A, MMQ)"
    # F16 weights: hipBLAS on the vector ALUs at packed half precision: the data sheet's 26.5 TFLOPS (2 x 13.3 FP32
    # rounded down there), no MMQ
    assert matmul_rate(mi50, rocm, "F16", 512).peak == 26.5e12 and matmul_rate(mi50, rocm, "F16", 512).kernel == ""
    # RDNA4 has WMMA: the engine's MMQ path as before (no MMQ bound in the ROCm priors: the FP16 WMMA figure)
    r9700 = get_hardware("radeon-ai-pro-r9700")
    assert matmul_rate(r9700, rocm, "Q4_0", 512).kernel == "" and \
        matmul_rate(r9700, rocm, "Q4_0", 512).peak == r9700.fp16_tflops * 1e12


def test_rocm_bf16_as_f32_without_fast_bf16():
    from tokspeed.engines.backends import bf16_as_f32
    from tokspeed.engines.profile import get_engine
    from tokspeed.engines.rates import matmul_rate

    rocm = get_engine("llama.cpp-rocm")
    mi50 = backend_view("llama.cpp-rocm", get_hardware("mi50"))
    # ggml_cuda_mul_mat_cublas: AMD without fast_bf16_hardware_available (not RDNA3+, not CDNA) and more than 32
    # tokens -> compute type F32: the FP32 figure, 13.3 TFLOPS on the MI50 (its data sheet), not its 26.5 FP16
    assert bf16_as_f32("llama.cpp-rocm", mi50, "BF16", 512)
    rate = matmul_rate(mi50, rocm, "BF16", 512)
    assert rate.peak == 13.3e12 and rate.listed == "FP32"
    assert matmul_rate(mi50, rocm, "BF16", 32).peak == 26.5e12           # 32 tokens: BF16 compute type kept
    assert matmul_rate(mi50, rocm, "F16", 512).peak == 26.5e12           # F16: fast FP16 hardware on gfx906
    r9700 = get_hardware("radeon-ai-pro-r9700")                          # RDNA4: fast BF16
    assert not bf16_as_f32("llama.cpp-rocm", r9700, "BF16", 512)
    assert not bf16_as_f32("llama.cpp-vulkan", mi50, "BF16", 512)


def test_vulkan_prompt_flash_attention_path_follows_ggml_vulkan():
    from tokspeed.engines.backends import flash_attn_on_vector
    from tokspeed.engines.profile import get_engine
    from tokspeed.engines.rates import compute_rate

    b70, r9700 = get_hardware("arc-pro-b70"), get_hardware("radeon-ai-pro-r9700")
    # get_fa_tuning_params: coopmat1 FA needs the 16x16x16 F16 -> F32 shape (f32acc: GGML_PREC_F32); Intel's XMX
    # shapes are 8-row, so Xe2's matmuls are on XMX while its FlashAttention is FA_SCALAR; RDNA4 WMMA has the shape
    assert uses_matrix_units("llama.cpp-vulkan", b70) is True and flash_attn_on_vector("llama.cpp-vulkan", b70)
    assert not flash_attn_on_vector("llama.cpp-vulkan", r9700)
    assert not flash_attn_on_vector("llama.cpp-sycl", b70)               # another backend's kernels
    # NVIDIA Turing: FA_SCALAR on coopmat1 ("Nvidia compiler bug"), but not where the driver has coopmat2
    t = replace(get_hardware("rtx-2080-ti"), driver="nvk")
    assert flash_attn_on_vector("llama.cpp-vulkan", t) and not flash_attn_on_vector("llama.cpp-vulkan", replace(t, arch="ampere"))
    eng = get_engine("llama.cpp-vulkan", b70)
    view = backend_view("llama.cpp-vulkan", b70)
    prompt = compute_rate(view, eng, "F16", 512, attn=True)
    # the prompt's attention at the packed-half vector rate: FP32 figure x 2 (Xe vector engines), not XMX's FP16
    assert prompt.peak == 2 * b70.fp32_tflops * 1e12 < b70.fp16_tflops * 1e12
    # a decode pass: FlashAttention's block loop off coopmat2, at the same packed-half vector rate (fa_decode.py);
    # under NVIDIA's coopmat2 driver the matrix figure
    assert compute_rate(view, eng, "F16", 1, attn=True).peak == 2 * b70.fp32_tflops * 1e12
    ada = replace(get_hardware("rtx-4090"), driver="nvidia")
    ada_view = backend_view("llama.cpp-vulkan", ada)
    ada_eng = get_engine("llama.cpp-vulkan", ada)
    assert compute_rate(ada_view, ada_eng, "F16", 1, attn=True).peak == ada_view.matmul_flops


def test_dp4a_kernels_take_their_own_format_factor_where_fitted():
    import math

    from tokspeed.engines.profile import get_engine
    from tokspeed.engines.rates import compute_rate

    mi50, r9700 = get_hardware("mi50"), get_hardware("radeon-ai-pro-r9700")
    base = replace(get_engine("llama.cpp-rocm"), eta_compute_format={"kquant": 0.8})
    own = replace(base, eta_compute_format={"kquant": 0.8, "dp4a-kquant": 0.4})
    # gfx906 runs MMQ on sdot4 (DP4A): its own unpacking of Q4_K, half the group's factor here
    assert math.isclose(compute_rate(mi50, own, "Q4_K_M", 512).eta, compute_rate(mi50, base, "Q4_K_M", 512).eta / 2)
    # RDNA4's WMMA kernels are not the DP4A ones: the group's factor
    assert compute_rate(r9700, own, "Q4_K_M", 512).eta == compute_rate(r9700, base, "Q4_K_M", 512).eta
