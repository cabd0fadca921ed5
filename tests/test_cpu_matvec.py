"""llama.cpp's CPU decode kernels (priors.toml [CPUMV]): one token's matmuls run as int8 dot products, at a
measured fraction of the CPU's int8 rate (Hardware.cpu_int8_ops: the row's int8_tops, else AVX2's 2 x FP32)."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from tokspeed import predict
from tokspeed.engines.profile import calibrated, get_engine
from tokspeed.hardware.catalog import get_hardware

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS-cpu-prefill.md"
AVX2_INT8_PER_FP32 = 2      # vpmaddubsw + vpmaddwd: 32 int8 multiply-adds per two 256-bit instructions


def measured_matvec() -> dict:
    """{format: fraction of the FP32 peak} from bench_cpu_matvec.py's table in the results file."""
    section = RESULTS.read_text().split("<!-- bench_cpu_matvec:start -->")[1]
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^\| (Q\w+) \|.*\| \*\*([\d.]+)\*\* \|$", section, re.M)}


def test_the_prior_is_the_measured_fraction_of_avx2s_int8_rate():
    """The machine that measured it does AVX2 int8 dot products at 2 x its FP32 rate: a format's matvec fraction
    of the FP32 peak / 2 is the prior's fraction of the int8 rate (within the spread of the runs, 0.03)."""
    rows = measured_matvec()
    prior = get_engine("llama.cpp-cpu").int8_matvec
    for group, name in (("legacy", "Q4_0"), ("kquant", "Q4_K_M"), ("q8", "Q8_0")):
        assert AVX2_INT8_PER_FP32 * prior[group] == pytest.approx(rows[name], abs=0.03), (group, rows[name])


def test_an_m1_max_cpu_cluster_decodes_at_its_int8_matvec_rate_by_hand():
    """llama-2-7b Q4_0 on the M1 Max's 8 P-cores: 2 x (32 x (4 x 4096^2 + 3 x 4096 x 11008) + 32000 x 4096)
    = 13.21 GFLOP a token at 4 x 0.819 TFLOP/s (sdot) x 0.115 = 377 GFLOP/s -> 35.1 ms + the 0.5 ms step
    (the barriers add ~0.25 ms): compute bound, where the weights at the CPU cluster's 218.8 GB/s x 0.7 take
    24.6 ms. Public CPU-only runs are ~31 tok/s (issue #11: ~2.3x below the old 72); this gives 28."""
    flops = 2 * (32 * (4 * 4096 ** 2 + 3 * 4096 * 11008) + 32000 * 4096)
    by_hand = flops / (4 * 0.819e12 * 0.115) + 5e-4
    p = predict("llama-2-7b", "m1-max-32", quant="Q4_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    assert p.decode.bound == "compute"
    assert p.decode.ms_per_token / 1e3 == pytest.approx(by_hand, rel=0.02)


@pytest.mark.parametrize("hw_id, int8_per_fp32", [("ddr5-6000-2ch", 4), ("ddr4-3200-2ch", AVX2_INT8_PER_FP32)])
def test_desktop_decode_stays_bound_by_its_memory(hw_id, int8_per_fp32):
    """8 cores have int8 to spare: Zen 4 (VNNI, the row's int8_tops = 4 x 1.152) and Zen 3 (AVX2, no int8 figure:
    2 x 1.126) run 13.2 GFLOP in 25 / 51 ms, under the 56 / 105 ms their DDR5-6000 / DDR4-3200 take."""
    hw = get_hardware(hw_id)
    assert hw.cpu_int8_ops == pytest.approx(int8_per_fp32 * hw.fp32_tflops * 1e12)
    p = predict("llama-2-7b", hw, quant="Q4_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    assert p.decode.bound == "memory"


def test_float_weights_and_gpu_engines_do_not_take_the_int8_path():
    prof = get_engine("llama.cpp-cpu")
    hw = get_hardware("ddr5-6000-2ch")
    assert prof.int8_matvec_flops(hw, "F16", 1) == 0.0
    assert prof.int8_matvec_flops(hw, "Q4_0", 512) == 0.0          # prompt GEMMs: [CPUPP]
    assert prof.int8_matvec_flops(hw, "Q4_0", 1) == pytest.approx(4.608e12 * 0.115)
    assert get_engine("llama.cpp-cuda").int8_matvec == {}


def test_a_machine_calibration_drops_it():
    """A measured eta already holds whatever the int8 kernels made of the step."""
    hw = replace(get_hardware("ddr5-6000-2ch"), calibration={"llama.cpp": {"eta_mem": 0.6, "overhead_s": 1e-3}})
    assert calibrated(get_engine("llama.cpp-cpu"), hw).int8_matvec == {}
