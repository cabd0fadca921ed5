"""llama.cpp-sycl's prompt FlashAttention (engines/backends.py ``sycl_fa_on_vector``): ggml-sycl's FlashAttention
kernels (present from llama-cpp-python 0.3.17's vendored copy, 2026-03; eras.toml backend_flash_attention_since) are
ports of ggml-cuda's fattn-tile and fattn-vec alone (fattn.cpp: "Todo: Use the XMX kernel if possible"), so a
prompt's attention runs at the packed-half vector rate, not the XMX figure; before them, or with -fa off, the
attention core is two oneDNN GEMMs on the XMX units."""

import math

import pytest

from tokspeed.engines.backends import sycl_fa_on_vector
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import compute_rate
from tokspeed.hardware.catalog import get_hardware

B70 = "arc-pro-b70"     # Xe2: 32 Xe-cores x 2048 FP16 XMX / 256 FP32 per clock x 2.4 GHz = 157.29 / 19.66 TFLOP/s


@pytest.mark.parametrize("version, fa, hw, on_vector", [
    ("b9039", True, B70, True),          # 2026-05: fattn-tile on the vector ALUs
    (None, True, B70, True),             # today's build: still no XMX FlashAttention
    ("2025-08", None, B70, False),       # no SYCL FlashAttention yet (-fa auto is off): the oneDNN GEMMs on XMX
    ("b9039", False, B70, False),        # -fa off: the oneDNN GEMMs
    ("b9039", True, "arc-a770", True),   # Xe-HPG: XMX GEMMs, the same tile kernel for the attention
])
def test_which_units_the_prompt_attention_runs_on(version, fa, hw, on_vector):
    hw = get_hardware(hw)
    assert sycl_fa_on_vector(get_engine("llama.cpp-sycl", hw, version=version, flash_attention=fa), hw) is on_vector


def test_a_prompt_attention_rate_by_hand():
    hw = get_hardware(B70)
    fa = get_engine("llama.cpp-sycl", hw, version="b9039", flash_attention=True)
    gemm = get_engine("llama.cpp-sycl", hw, version="b9039", flash_attention=False)
    r_fa = compute_rate(hw, fa, "Q4_0", 2048, "tensor", attn=True)
    r_gemm = compute_rate(hw, gemm, "Q4_0", 2048, "tensor", attn=True)
    # packed half on the vector ALUs: 2 x 19.66 = 39.32 TFLOP/s, against the XMX 157.29
    assert r_fa.listed == "vector FP16" and math.isclose(r_fa.peak, 2 * 19.66e12, rel_tol=1e-3)
    assert math.isclose(r_gemm.peak, 157.29e12, rel_tol=1e-3)
    assert math.isclose(r_fa.eta, fa.compute_eff_for(hw) * fa.eta_attn, rel_tol=1e-9)
