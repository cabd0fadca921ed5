"""llama.cpp-rocm's prompt FlashAttention by build (engines/backends.py HIP_FA_MMA_SINCE): before the native WMMA /
MFMA FlashAttention kernel (absent from llama-cpp-python 0.3.16's vendored ggml-cuda, 2025-08; present in 0.3.17's,
2026-03) a HIP build without GGML_HIP_ROCWMMA_FATTN runs fattn-tile on the vector ALUs (common.cuh
fp16_mma_available is false under GGML_USE_HIP), so the attention of a prompt runs at the packed-half vector rate,
not the WMMA figure."""

import math

import pytest

from tokspeed.engines.backends import hip_fa_on_vector
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import compute_rate
from tokspeed.hardware.catalog import get_hardware

R9700 = "radeon-ai-pro-r9700"     # RDNA4: 191.4 TFLOP/s FP16 WMMA (catalog), 47.8 FP32 -> 95.6 packed-half vector


@pytest.mark.parametrize("version, fa, hw, on_vector", [
    ("b7423", True, R9700, True),        # 2025-12: fattn-tile
    ("2025-09", True, "mi300x", True),   # CDNA too: no MFMA FlashAttention before the native kernel
    ("2026-06", True, R9700, False),     # BEST_FATTN_KERNEL_MMA_F16 on WMMA
    (None, True, R9700, False),          # today's build
    ("b7423", False, R9700, False),      # -fa off: the attention is hipBLAS / MMQ matmuls on WMMA
    ("b7423", True, "mi50", False),      # gfx906 has no matrix units: its attention is on the vector ALUs anyway
])
def test_which_units_the_prompt_attention_runs_on(version, fa, hw, on_vector):
    hw = get_hardware(hw)
    assert hip_fa_on_vector(get_engine("llama.cpp-rocm", hw, version=version, flash_attention=fa), hw) is on_vector


def test_a_prompt_attention_rate_by_hand():
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
