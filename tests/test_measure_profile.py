"""The probe's hardware profile: custom-hardware TOML loadable by the catalog, with [measured]."""

import tomllib

import pytest

from tokspeed.hardware.catalog import hardware_from_toml
from tokspeed.measure.detect import MachineInfo
from tokspeed.measure.probe_result import ProbeResult
from tokspeed.measure.profile import build_profile, write_profile
from tokspeed.measure.stats import Timing


def _machine():
    return MachineInfo(cpu_model="AMD EPYC", vendor="AMD", logical_cores=2, physical_cores=2,
                       ram_bytes=24_000_000_000, available_ram_bytes=20_000_000_000, os="Linux")


def _results():
    t = Timing.from_samples([0.5, 0.5, 0.5])
    return [ProbeResult("cpu_read", "GB/s", 20e9, t),            # 20 GB in 0.5 s = 40 GB/s
            ProbeResult("cpu_copy", "GB/s", 15e9, t),            # 30 GB/s
            ProbeResult("cpu_matmul_fp32", "TFLOP/s", 1e11, t),  # 0.2 TFLOP/s
            ProbeResult("cpu_matmul_bf16", "TFLOP/s", 4e11, t)]  # 0.8 TFLOP/s


def test_profile_round_trips_through_hardware_from_toml(tmp_path):
    prof = build_profile(_machine(), _results(), threads=2)
    p = write_profile(prof, tmp_path / "sub" / "me.toml")
    hw = hardware_from_toml(p)
    assert hw.kind == "cpu" and hw.vendor == "AMD"
    assert hw.bandwidth_gbps == pytest.approx(40.0)
    assert hw.memory_gb == pytest.approx(24.0)
    assert hw.fp32_tflops == pytest.approx(0.2) and hw.fp16_tflops == pytest.approx(0.8)
    raw = tomllib.loads(p.read_text())
    assert raw["measured"]["cpu_copy_gbps"] == pytest.approx(30.0)
    assert raw["measured"]["cpu_read_spread"] == 0.0
    assert raw["measured"]["threads"] == 2
    assert "calibration" in raw


def test_gpu_results_make_a_gpu_profile(tmp_path):
    from tokspeed.measure.detect import GpuInfo

    m = _machine()
    m.gpus = [GpuInfo(0, "NVIDIA H200", 141_000_000_000, 140_000_000_000, "9.0")]
    t = Timing.from_samples([0.001] * 3)
    res = _results() + [ProbeResult("gpu_read", "GB/s", 4.2e9, t),                # 4200 GB/s
                        ProbeResult("gpu_matmul_bf16", "TFLOP/s", 7e11, t),         # 700 TFLOP/s
                        ProbeResult("gpu_h2d_pinned", "GB/s", 5e7, t)]             # 50 GB/s
    hw = hardware_from_toml(write_profile(build_profile(m, res, 2), tmp_path / "g.toml"))
    assert hw.kind == "gpu" and hw.bandwidth_gbps == pytest.approx(4200)
    assert hw.fp16_tflops == pytest.approx(700) and hw.host_link_gbps == pytest.approx(50)
    assert hw.memory_gb == pytest.approx(141)
