"""A probed profile's [calibration] (from `tokspeed measure --calibrate`) drives later predictions."""

import pytest

import tokspeed
from tokspeed.hardware.catalog import hardware_from_toml

PROFILE = """
name = "this box"
kind = "cpu"
vendor = "test"
memory_gb = 64
bandwidth_gbps = 40.0
fp32_tflops = 1.0

[measured]
cpu_read_gbps = 40.0

[calibration.torch]
backend = "torch"
eta_memory = 0.8
eta_kv = 0.5
overhead_s = 0.002
bandwidth_gbps = 40.0
n_points = 6
rms_rel_error = 0.03
"""


def test_calibration_replaces_the_engine_prior_for_its_backend(tmp_path):
    f = tmp_path / "local.toml"
    f.write_text(PROFILE)
    hw = hardware_from_toml(f)
    p = tokspeed.predict("smollm2-135m", hw, quant="F32", kv_dtype="f32", engine="gpt-fast", prompt=0, gen=1,
                         context=1000)
    d = p.decode
    # by hand: weights (and activations) at 0.8 x 40 GB/s, KV at 0.5 x 40 GB/s, plus 2 ms per step
    other = d.bytes_per_token - d.kv_bytes_per_token
    by_hand = other / (40e9 * 0.8) + d.kv_bytes_per_token / (40e9 * 0.5) + 0.002
    assert d.ms_per_token / 1e3 == pytest.approx(by_hand, rel=0.01)
    assert "this machine's calibration" in p.engine_source
    # band: 2 x the fit's 3 % rms error; the range runs from tok/s / 1.06 to tok/s x 1.06
    assert d.tok_s_high / d.tok_s == pytest.approx(1.06)
    assert d.tok_s / d.tok_s_low == pytest.approx(1.06)


def test_other_engines_and_catalog_devices_keep_their_model(tmp_path):
    f = tmp_path / "local.toml"
    f.write_text(PROFILE)
    hw = hardware_from_toml(f)
    p = tokspeed.predict("smollm2-135m", hw, quant="F32", engine="vllm", prompt=0, gen=1)
    assert "this machine" not in p.engine_source
    q = tokspeed.predict("smollm2-135m", "rtx-4090", quant="F32", engine="gpt-fast", prompt=0, gen=1)
    assert "this machine" not in q.engine_source
