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
    assert hw.memory_gb == pytest.approx(24e9 / 2**30, abs=5e-4)      # the OS's 24e9 bytes of RAM, in GiB (memory_gb's unit)
    assert hw.fp32_tflops == pytest.approx(0.2) and hw.fp16_tflops == pytest.approx(0.8)
    raw = tomllib.loads(p.read_text())
    assert raw["measured"]["cpu_copy_gbps"] == pytest.approx(30.0)
    assert raw["measured"]["cpu_read_spread"] == 0.0
    assert raw["measured"]["threads"] == 2
    assert "calibration" in raw


def test_gpu_results_make_a_gpu_profile(tmp_path):
    from tokspeed.measure.detect import GpuInfo

    m = _machine()
    m.gpus = [GpuInfo(0, "NVIDIA H200", 143_771 * 2**20, 140_000_000_000, "9.0")]
    t = Timing.from_samples([0.001] * 3)
    res = _results() + [ProbeResult("gpu_read", "GB/s", 4.2e9, t),                # 4200 GB/s
                        ProbeResult("gpu_matmul_bf16", "TFLOP/s", 7e11, t),         # 700 TFLOP/s
                        ProbeResult("gpu_h2d_pinned", "GB/s", 5e7, t)]             # 50 GB/s
    hw = hardware_from_toml(write_profile(build_profile(m, res, 2), tmp_path / "g.toml"))
    assert hw.kind == "gpu" and hw.bandwidth_gbps == pytest.approx(4200)
    assert hw.fp16_tflops == pytest.approx(700) and hw.host_link_gbps == pytest.approx(50)
    assert hw.memory_gb == pytest.approx(143_771 / 1024, abs=5e-4)      # nvidia-smi's 143,771 MiB = 140.4 GiB ("141 GB")


@pytest.mark.parametrize("flags, k", [({"avx2", "fma"}, 2), ({"avx2", "avx512f", "avx512_vnni"}, 4),
                                      ({"avx2", "avx_vnni"}, 4), ({"fp", "asimd", "asimddp"}, 4), ({"sse4_2"}, 0)])
def test_int8_dot_rate_from_the_instruction_set(monkeypatch, flags, k):
    """vpdpbusd / sdot: 4 int8 multiply-adds per 32-bit lane in one instruction (4 x FP32); AVX2 needs two
    (2 x); nothing known: 0 (the hardware then reads AVX2's 2 x)."""
    from tokspeed.measure import detect

    monkeypatch.setattr(detect, "_cpuinfo_flags", lambda: set(flags))
    assert detect.int8_dot_per_fp32() == k


def test_the_probe_writes_the_cpus_int8_rate(monkeypatch, tmp_path):
    from tokspeed.measure import profile

    monkeypatch.setattr(profile, "int8_dot_per_fp32", lambda apple=False: 4)
    hw = hardware_from_toml(write_profile(build_profile(_machine(), _results(), 2), tmp_path / "v.toml"))
    assert hw.int8_tops == pytest.approx(4 * 0.2)                  # 4 x the measured 0.2 TFLOP/s FP32
    monkeypatch.setattr(profile, "int8_dot_per_fp32", lambda apple=False: 0)
    hw = hardware_from_toml(write_profile(build_profile(_machine(), _results(), 2), tmp_path / "u.toml"))
    assert hw.int8_tops == 0 and hw.cpu_int8_ops == pytest.approx(2 * 0.2e12)   # unknown ISA: AVX2's 2 x


def test_cpuinfo_flags_read_x86_flags_and_arm_features(tmp_path):
    from tokspeed.measure.detect import _cpuinfo_flags

    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes crc32 atomics asimdrdm "
                   "lrcpc dcpop asimddp sha512\nCPU implementer\t: 0x41\n")
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx fma avx2 avx512f avx512_vnni\n")
    assert "asimddp" in _cpuinfo_flags(str(arm)) and "avx512_vnni" in _cpuinfo_flags(str(x86))
    assert _cpuinfo_flags(str(tmp_path / "missing")) == set()


@pytest.mark.parametrize("sysctl, k", [("1", 4), ("0", 0), ("", 0)])
def test_apple_silicon_dot_product_from_sysctl(monkeypatch, sysctl, k):
    from tokspeed.measure import detect

    monkeypatch.setattr(detect, "_sysctl", lambda name: sysctl if name == "hw.optional.arm.FEAT_DotProd" else "")
    assert detect.int8_dot_per_fp32(apple=True) == k
