"""MBU is shown only when it is a measurement: never above 100 %, never divided by a noisy bandwidth probe."""

from types import SimpleNamespace

from tokspeed.measure.mbu import untrusted_bandwidth, utilisation
from tokspeed.measure.probe_cpu import steadier
from tokspeed.measure.runner import derive_rates
from tokspeed.measure.stats import Timing


def test_mbu_is_the_quotient_when_it_is_physics():
    assert utilisation(50.0, 100.0) == (0.5, "")


def test_mbu_above_one_is_no_measurement():
    mbu, why = utilisation(173.0, 100.0)
    assert mbu is None and "exceeds" in why and "tokspeed probe" in why


def test_a_noisy_probe_is_never_divided_by():
    noisy = {"measured": {"cpu_read_gbps": 20.0, "cpu_read_spread": 1.19}}
    why = untrusted_bandwidth(noisy)
    assert "119%" in why and utilisation(10.0, 20.0, why) == (None, why)
    assert untrusted_bandwidth({"measured": {"cpu_read_gbps": 20.0, "cpu_read_spread": 0.04}}) == ""
    assert untrusted_bandwidth(None) == ""            # a catalog device: its published figure


def test_derive_rates_drops_an_impossible_mbu_and_says_why():
    hw = SimpleNamespace(bandwidth_gbps=10.0, fp16_tflops=1.0, fp32_tflops=1.0)
    # 2 GB per step at 10 steps/s = 20 GB/s on a 10 GB/s profile: 200 %, impossible
    p = derive_rates({"batch": 1, "decode_tok_s": 10.0, "bytes_per_step": 2e9, "flops_per_step": 1e9}, hw, "F32")
    assert p["achieved_gbps"] == 20.0 and p["mbu"] is None and "exceeds" in p["mbu_unreliable"]


def test_an_unstable_bandwidth_probe_is_measured_again():
    def result(spread):
        t = Timing(median_s=1.0, min_s=1.0, max_s=1.0 + spread, repeats=5, warmup=1)
        return [SimpleNamespace(timing=t)]

    tries = iter([result(1.19), result(0.5), result(0.03)])
    calls = []

    def probe():
        calls.append(1)
        return next(tries)

    best = steadier(probe)
    assert len(calls) == 3 and abs(best[0].timing.spread - 0.03) < 1e-9
