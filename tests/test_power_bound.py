"""The board-power bound on prompt matmuls (EngineProfile.power_flops, timing.op_time): a board under tensor
load clocks down to stay within its power limit, so a prompt pass's matmuls reach at most tdp_w / pj_per_flop
FLOP/s (x2 on INT8 tensor cores), soft-minimum with the other compute bounds. Values by hand, and the one
published comparison that shows it: the same AD102 die at 300 W and at 450 W."""

import math

import pytest

from tokspeed.engines.profile import EngineProfile, get_engine
from tokspeed.engines.rates import CAP_SHARPNESS, INT8_OPS_PER_FP16_ENERGY
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.spec import Hardware
from tokspeed.ledger import Op, Role, Scope
from tokspeed.predict import predict
from tokspeed.timing import op_time
from tokspeed.engines.rates import power_flops


def _gpu(tdp_w=300.0):
    return Hardware(id="x", name="NVIDIA RTX A6000", kind="gpu", vendor="NVIDIA", memory_gb=48,
                    bandwidth_gbps=1000.0, fp16_tflops=100.0, tdp_w=tdp_w)


MATMUL = Op("matmul", Role.MLP, Scope.DENSE, "tensor", 1, flops=1e12, weight_bytes=1e6)
PROF = EngineProfile("t", eta_compute={"default": 0.5}, pj_per_flop=10.0, gemm_half_tokens=0.0)


def _soft_min(a, b):
    return (a ** -CAP_SHARPNESS + b ** -CAP_SHARPNESS) ** (-1 / CAP_SHARPNESS)


def test_power_bound_by_hand():
    # compute: 100 TFLOP/s x 0.5 = 50 TFLOP/s; power: 300 W / 10 pJ = 30 TFLOP/s; soft minimum of the two
    assert power_flops(PROF, _gpu()) == pytest.approx(30e12, rel=1e-12)
    t, bound = op_time(MATMUL, _gpu(), PROF, "F16", tokens=512)
    assert bound == "compute"
    assert math.isclose(t, 1e12 / _soft_min(50e12, 30e12), rel_tol=1e-12)        # ~35.6 ms, not 20 ms


def test_no_power_bound_on_a_matrix_vector_pass_or_without_a_board_power():
    # up to 8 tokens per pass (decode, small batches): matrix-vector kernels, memory-bound, no clock-down modelled:
    # 1e12 / (50e12 x eta_matvec 1) = 20 ms
    for tokens in (1, 8):
        t, _ = op_time(MATMUL, _gpu(), PROF, "F16", tokens=tokens)
        assert math.isclose(t, 0.020, rel_tol=1e-12)
    # a decode batch of 16 tokens per pass is tiled: bound as a prompt chunk is
    t, _ = op_time(MATMUL, _gpu(), PROF, "F16", tokens=16)
    assert math.isclose(t, 1e12 / _soft_min(50e12, 30e12), rel_tol=1e-12)
    # a device without a listed board power, or an engine without the energy figure: the compute rate alone
    t, _ = op_time(MATMUL, _gpu(tdp_w=0.0), PROF, "F16", tokens=512)
    assert math.isclose(t, 0.020, rel_tol=1e-12)
    t, _ = op_time(MATMUL, _gpu(), EngineProfile("t", eta_compute={"default": 0.5}), "F16", tokens=512)
    assert math.isclose(t, 0.020, rel_tol=1e-12)


def test_int8_matmuls_spend_half_the_energy_per_op():
    """Quantized weights under an MMQ bound run on INT8 tensor cores: the power bound doubles (300 W / 10 pJ x 2
    = 60 TFLOP/s), soft-minimum with the compute rate and the core-cycle bound."""
    assert INT8_OPS_PER_FP16_ENERGY == 2.0
    hw = Hardware(id="x", name="NVIDIA RTX A6000", kind="gpu", vendor="NVIDIA", memory_gb=48,
                  bandwidth_gbps=1000.0, fp16_tflops=100.0, fp32_tflops=10.0, tdp_w=300.0)
    prof = EngineProfile("t", eta_compute={"default": 0.5}, pj_per_flop=10.0, quant_flops_per_core_cycle=2000.0)
    qmax = 10e12 / (2 * 128) * 2000.0      # cores x clock = FP32 peak / (2 x 128 lanes per GA10x SM): 78 TFLOP/s
    expect = sum(x ** -CAP_SHARPNESS for x in (50e12, qmax, 60e12)) ** (-1 / CAP_SHARPNESS)
    t, _ = op_time(MATMUL, hw, prof, "Q4_0", tokens=10 ** 9)     # matmul_eff -> 1 (gemm_half_tokens 0)
    assert math.isclose(t, 1e12 / expect, rel_tol=1e-9)


def test_the_int8_allowance_follows_the_engine_not_the_device_core_count():
    """Without an FP32 figure the device's core count is unknown, so there is no MMQ bound; its quantized matmuls
    still run on INT8 tensor cores and get 2 x 30 = 60 TF of board power: soft minimum of 50 and 60 TF."""
    prof = EngineProfile("t", eta_compute={"default": 0.5}, pj_per_flop=10.0, quant_flops_per_core_cycle=2000.0)
    t, _ = op_time(MATMUL, _gpu(), prof, "Q4_0", tokens=10 ** 9)     # _gpu() has no fp32_tflops
    assert math.isclose(t, 1e12 / _soft_min(50e12, 60e12), rel_tol=1e-9)
    # F16 weights under the same engine: FP16 tensor cores, 30 TF
    t, _ = op_time(MATMUL, _gpu(), prof, "F16", tokens=10 ** 9)
    assert math.isclose(t, 1e12 / _soft_min(50e12, 30e12), rel_tol=1e-9)


def test_attention_gets_the_fp16_power_bound():
    """The attention core of a prompt chunk runs in FP16 whatever the weights: 100 TF x 0.5 x eta_attn 1 = 50 TF,
    power 30 TF (no INT8 doubling, even over Q4_0 weights under an MMQ engine)."""
    attn = Op("attention", Role.ATTN_CORE, Scope.DENSE, "tensor", 1, flops=1e12, kv_read_bytes=1.0)
    prof = EngineProfile("t", eta_compute={"default": 0.5}, pj_per_flop=10.0, quant_flops_per_core_cycle=2000.0)
    t, bound = op_time(attn, _gpu(), prof, "Q4_0", tokens=512)
    assert bound == "compute" and math.isclose(t, 1e12 / _soft_min(50e12, 30e12), rel_tol=1e-12)


def test_the_same_die_at_lower_board_power_prefills_slower():
    """llama.cpp (2024-05) prefilling llama-3-8b F16 (512 tokens): RTX 6000 Ada (AD102, 142 SMs at 2.505 GHz,
    300 W) 6,663 tok/s against the RTX 4090 (AD102, 128 SMs at 2.52 GHz, 450 W) 9,382: 0.71x (calibration rows
    of the XiongjieDai tables). SMs x clock say 1.10x and the listed FP16 peaks (364 vs 2 x 165 with FP16
    accumulate) 1.10x; the board power says 0.67x. The shipped model lands between, nearer the power."""
    kw = dict(quant="F16", prompt=512, gen=0, context=0, engine_version="2024-05")
    ada = predict("llama-3-8b", get_hardware("rtx-6000-ada"), **kw).prefill.tok_s
    ge = predict("llama-3-8b", get_hardware("rtx-4090"), **kw).prefill.tok_s
    assert 0.6 < ada / ge < 0.85
    assert get_engine("llama.cpp-cuda").pj_per_flop > 0


def test_a_350_w_hopper_is_held_near_a_450_w_ada_card():
    """H100 PCIe: 756 dense FP16 TFLOP/s (2.3x an RTX 4090's FP16-accumulate 330) within 350 W. Without the bound
    the 2024 era's prefill followed the tensor peak, ~2x the RTX 4090's; within its board power it is held to
    within 1.5x of it (the RTX 4090 spends 450 W)."""
    kw = dict(quant="Q4_K_M", prompt=1024, gen=0, context=0, engine_version="2024-05")
    h100 = predict("llama-3-8b", get_hardware("h100-pcie"), **kw).prefill.tok_s
    ge = predict("llama-3-8b", get_hardware("rtx-4090"), **kw).prefill.tok_s
    assert h100 / ge < 1.5


def test_explain_says_how_the_prompt_matmul_rate_comes_about():
    """explain's line on a prompt matmul's rate (explain.rates_text.matmul_how over the Rate), printed by `explain
    --prefill`: 100 TF x 0.5 = 50 TF of tensor rate, 300 W / 10 pJ = 30 TF of board power, soft minimum
    (50^-4 + 30^-4)^(-1/4) = 29.1 TF."""
    from tokspeed.engines.rates import matmul_rate
    from tokspeed.explain.rates_text import matmul_how

    def prompt_matmul_how(hw, prof, quant, tokens):
        return matmul_how(matmul_rate(hw, prof, quant, tokens), hw, prof, quant, tokens)

    how = prompt_matmul_how(_gpu(), PROF, "F16", 512)
    assert how.startswith(f"F16 matmuls over 512 tokens run at {_soft_min(50e12, 30e12) / 1e12:,.1f} TFLOP/s")
    assert "50.0 TFLOP/s (listed FP16 100 TFLOP/s x efficiency 0.50)" in how
    assert "board power 300 W / 10 pJ per FLOP = 30.0 TFLOP/s" in how
    assert "MMQ" not in how and how.endswith("(soft minimum)")
    assert "board power" not in prompt_matmul_how(_gpu(tdp_w=0.0), PROF, "F16", 512)


def test_an_older_era_spends_more_energy_per_useful_flop():
    """The fit gives an older era its prefill efficiency as a multiplier on the newest's (era_compute): the same
    board then does less useful work per second *and per joule* (the extra work is spent at the same power), so
    its energy per FLOP is the newest's / era_compute. Read back from the shipped fitted.toml."""
    new = get_engine("llama.cpp-cuda")
    for era in ("2023", "2024"):
        old = get_engine("llama.cpp-cuda", version=era)
        c = old.eta_compute["gpu"] / new.eta_compute["gpu"]
        assert c < 1.0
        assert old.pj_per_flop == pytest.approx(new.pj_per_flop / c, rel=2e-3)   # 4 significant digits written
