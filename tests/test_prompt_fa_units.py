"""Which units a prompt's FlashAttention runs on where a backend's kernels leave the matrix units to its GEMMs
(engines/backends.py ``fa_tile_on_vector``, ``FA_TILE_ON_VECTOR``):

- llama.cpp-rocm, by build (``HIP_FA_MMA_SINCE``): before the native WMMA / MFMA FlashAttention kernel (absent from
  llama-cpp-python 0.3.16's vendored ggml-cuda, 2025-08; present in 0.3.17's, 2026-03) a HIP build without
  GGML_HIP_ROCWMMA_FATTN runs fattn-tile on the vector ALUs (common.cuh fp16_mma_available is false under
  GGML_USE_HIP);
- llama.cpp-sycl: ggml-sycl's FlashAttention kernels (from 0.3.17's copy, 2026-03; eras.toml
  backend_flash_attention_since) are ports of ggml-cuda's fattn-tile and fattn-vec alone (fattn.cpp: "Todo: Use the
  XMX kernel if possible"); before them, or with -fa off, the attention core is two oneDNN GEMMs on the XMX units.

Either way a prompt's attention runs at the packed-half vector rate, not the matrix figure."""

import math

import pytest

from tokspeed.engines.backends import fa_tile_on_vector
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import compute_rate
from tokspeed.hardware.catalog import get_hardware

R9700 = "radeon-ai-pro-r9700"     # RDNA4: 191.4 TFLOP/s FP16 WMMA (catalog), 47.8 FP32 -> 95.6 packed-half vector
B70 = "arc-pro-b70"     # Xe2: 32 Xe-cores x 2048 FP16 XMX / 256 FP32 per clock x 2.4 GHz = 157.29 / 19.66 TFLOP/s


@pytest.mark.parametrize("engine, version, fa, hw, on_vector", [
    ("llama.cpp-rocm", "b7423", True, R9700, True),        # 2025-12: fattn-tile
    ("llama.cpp-rocm", "2025-09", True, "mi300x", True),   # CDNA too: no MFMA FlashAttention before the native kernel
    ("llama.cpp-rocm", "2026-06", True, R9700, False),     # BEST_FATTN_KERNEL_MMA_F16 on WMMA
    ("llama.cpp-rocm", None, True, R9700, False),          # today's build
    ("llama.cpp-rocm", "b7423", False, R9700, False),      # -fa off: the attention is hipBLAS / MMQ matmuls on WMMA
    ("llama.cpp-rocm", "b7423", True, "mi50", False),      # gfx906 has no matrix units: on the vector ALUs anyway
    ("llama.cpp-sycl", "b9039", True, B70, True),          # 2026-05: fattn-tile on the vector ALUs
    ("llama.cpp-sycl", None, True, B70, True),             # today's build: still no XMX FlashAttention
    ("llama.cpp-sycl", "2025-08", None, B70, False),       # no SYCL FlashAttention yet (-fa auto is off): oneDNN on XMX
    ("llama.cpp-sycl", "b9039", False, B70, False),        # -fa off: the oneDNN GEMMs
    ("llama.cpp-sycl", "b9039", True, "arc-a770", True),   # Xe-HPG: XMX GEMMs, the same tile kernel for the attention
    ("llama.cpp-cuda", "b7423", True, "rtx-4090", False),  # ggml-cuda's own MMA FlashAttention on the tensor cores
])
def test_which_units_the_prompt_attention_runs_on(engine, version, fa, hw, on_vector):
    hw = get_hardware(hw)
    assert fa_tile_on_vector(get_engine(engine, hw, version=version, flash_attention=fa), hw) is on_vector


def test_a_rocm_prompt_attention_rate_by_hand():
    hw = get_hardware(R9700)
    old = get_engine("llama.cpp-rocm", hw, version="b7423", flash_attention=True)
    new = get_engine("llama.cpp-rocm", hw, version="2026-06", flash_attention=True)
    r_old = compute_rate(hw, old, "Q4_0", 2048, "tensor", attn=True)
    r_new = compute_rate(hw, new, "Q4_0", 2048, "tensor", attn=True)
    assert r_old.listed == "vector FP16" and math.isclose(r_old.peak, 2 * 47.8e12, rel_tol=1e-3)
    assert math.isclose(r_new.peak, 191.4e12, rel_tol=1e-3)
    # the same efficiency (eta_compute x eta_attn) on half the peak: per FLOP the tile kernel takes twice as long
    assert math.isclose(r_old.eta, old.compute_eff_for(hw) * old.eta_attn, rel_tol=1e-9)
    assert math.isclose(r_old.eta, r_new.eta, rel_tol=1e-9)
    assert math.isclose(r_old.base / r_new.base, 95.6 / 191.4, rel_tol=1e-3)


def test_a_sycl_prompt_attention_rate_by_hand():
    hw = get_hardware(B70)
    fa = get_engine("llama.cpp-sycl", hw, version="b9039", flash_attention=True)
    gemm = get_engine("llama.cpp-sycl", hw, version="b9039", flash_attention=False)
    r_fa = compute_rate(hw, fa, "Q4_0", 2048, "tensor", attn=True)
    r_gemm = compute_rate(hw, gemm, "Q4_0", 2048, "tensor", attn=True)
    # packed half on the vector ALUs: 2 x 19.66 = 39.32 TFLOP/s, against the XMX 157.29
    assert r_fa.listed == "vector FP16" and math.isclose(r_fa.peak, 2 * 19.66e12, rel_tol=1e-3)
    assert math.isclose(r_gemm.peak, 157.29e12, rel_tol=1e-3)
    assert math.isclose(r_fa.eta, fa.compute_eff_for(hw) * fa.eta_attn, rel_tol=1e-9)
