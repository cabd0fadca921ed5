"""A Vulkan decode pass's attention core off coopmat2 runs ggml-vulkan's FlashAttention block loop on the vector ALUs
at its driver's own efficiency (tokspeed/engines/fa_decode.py); every other path keeps its rate.

Rates by hand: the Radeon AI PRO R9700 lists 47.8 TFLOPS FP32 (AMD's specification), RDNA4 packs two FP16 per FP32
lane (backends.VECTOR_FP16_PER_FP32), so the FA loop's peak is 95.6 TFLOP/s; the profile below sets eta_compute 0.5
and eta_attn 0.4.
"""

from types import SimpleNamespace

import pytest

from tokspeed.engines.driver import on_driver
from tokspeed.engines.fa_decode import DEPTH_ROWS_MIN, decode_attn_driver, fit_drivers
from tokspeed.engines.pooling import blend
from tokspeed.engines.profile import EngineProfile
from tokspeed.engines.rates import compute_rate
from tokspeed.hardware.catalog import get_hardware

R9700_FP16_VECTOR = 47.8e12 * 2


def vulkan(**kw) -> EngineProfile:
    return EngineProfile("llama.cpp-vulkan", eta_compute={"default": 0.5}, eta_attn=0.4, eta_matvec=0.25, **kw)


def r9700(driver):
    return on_driver(get_hardware("radeon-ai-pro-r9700"), driver)


def test_a_fitted_driver_times_the_decode_loop_at_its_own_efficiency_on_the_vector_alus():
    rate = compute_rate(r9700("radv"), vulkan(attn_decode_by_driver={"radv": 0.1}), "Q4_0", 1, attn=True)
    assert rate.value == pytest.approx(R9700_FP16_VECTOR * 0.5 * 0.4 * 0.1)      # 1.912 TFLOP/s
    assert rate.listed == "vector FP16"


def test_a_driver_without_a_fitted_value_takes_the_matvec_prior():
    rate = compute_rate(r9700("amdvlk"), vulkan(attn_decode_by_driver={"radv": 0.1}), "Q4_0", 4, attn=True)
    assert rate.value == pytest.approx(R9700_FP16_VECTOR * 0.5 * 0.4 * 0.25)     # 4.78 TFLOP/s


def test_a_prompt_pass_keeps_its_tiles():
    hw = r9700("radv")
    a = compute_rate(hw, vulkan(attn_decode_by_driver={"radv": 0.1}), "Q4_0", 512, attn=True)
    b = compute_rate(hw, vulkan(), "Q4_0", 512, attn=True)
    assert a.value == b.value and a.listed == "FP16"         # the coopmat1 FA tiles on RDNA4's matrix cores


def test_nvidia_coopmat2_and_other_backends_are_untouched():
    hw = on_driver(get_hardware("rtx-4090"), "nvidia")
    assert decode_attn_driver("llama.cpp-vulkan", hw) == ""                  # coopmat2: the tensor cores' tiles
    assert decode_attn_driver("llama.cpp-vulkan", on_driver(get_hardware("rtx-4090"), "nvidia-cm1")) == "nvidia-cm1"
    assert decode_attn_driver("llama.cpp-cuda", get_hardware("rtx-4090")) == ""
    assert decode_attn_driver("llama.cpp-rocm", get_hardware("radeon-ai-pro-r9700")) == ""
    a = compute_rate(hw, vulkan(attn_decode_by_driver={"nvidia": 0.01}), "Q4_0", 1, attn=True)
    b = compute_rate(hw, vulkan(), "Q4_0", 1, attn=True)
    assert a.value == b.value and a.listed == "FP16"


def test_the_fit_takes_apart_the_drivers_of_deep_decode_rows_only():
    radv, anv, nv = r9700("radv"), get_hardware("intel-arc-pro-b70"), on_driver(get_hardware("rtx-4090"), "nvidia")
    rows = [SimpleNamespace(kind="decode", context=DEPTH_ROWS_MIN, hw=radv),
            SimpleNamespace(kind="decode", context=DEPTH_ROWS_MIN - 1, hw=anv),     # too shallow
            SimpleNamespace(kind="prefill", context=32768, hw=anv),                 # a prompt
            SimpleNamespace(kind="decode", context=32768, hw=nv)]                   # coopmat2
    assert fit_drivers("llama.cpp-vulkan", rows) == ["radv"]


def test_pooling_moves_a_drivers_value_toward_the_matvec_prior_and_drops_it_without_rows():
    prior, fitted = vulkan(), vulkan(attn_decode_by_driver={"radv": 0.04})
    assert blend(prior, fitted, 0.0).attn_decode_by_driver == {}
    assert blend(prior, fitted, 1.0).attn_decode_by_driver == {"radv": 0.04}
    assert blend(prior, fitted, 0.5).attn_decode_by_driver["radv"] == pytest.approx(0.1)    # sqrt(0.25 x 0.04)
