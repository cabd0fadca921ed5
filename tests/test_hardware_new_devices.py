"""Devices people buy now (issue 27 item 6): entries checked against the vendors' published figures, computed by
hand here from units x clock x rate per unit and bus width x data rate (not read back from the catalog's own
derivations)."""

import csv
from pathlib import Path

import pytest

from tokspeed.engines.issue import core_cycles_per_s, fp32_lanes_per_core
from tokspeed.engines.mmq import mmq_unit
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.match import closest_device

REPO = Path(__file__).resolve().parent.parent


def test_radeon_ai_pro_r9700_is_64_rdna4_cus_at_2_92_ghz():
    hw = get_hardware("r9700")
    # AMD: 32 GB GDDR6, 256-bit at 20 Gbps; 47.8 TFLOPS FP32 (64 CUs x 64 lanes x 2 dual issue x 2 FLOPs x 2.92 GHz)
    assert (hw.memory_gb, hw.bandwidth_gbps) == (32, 256 / 8 * 20)
    assert hw.fp32_tflops == pytest.approx(47.8, abs=0.05)
    assert hw.arch == "rdna4" and "wmma-fp8" in hw.matrix_units
    assert core_cycles_per_s(hw) == pytest.approx(64 * 2.92e9, rel=0.002)      # CUs x clock: 128 lanes per CU


def test_rx_9070_non_xt():
    hw = get_hardware("rx-9070")
    # AMD: 56 CUs, boost 2520 MHz, 36.1 TFLOPS FP32; 16 GB at 640 GB/s; 220 W
    assert hw.fp32_tflops == pytest.approx(56 * 128 * 2 * 2.52e9 / 1e12, abs=0.05)
    assert (hw.bandwidth_gbps, hw.tdp_w) == (640, 220)
    # RDNA 4 WMMA: 1024 dense FP16 FLOPs per CU per clock (the RX 9070 XT: 64 x 1024 x 2.97 GHz = 194.6, AMD's 195)
    assert hw.fp16_tflops == pytest.approx(56 * 1024 * 2.52e9 / 1e12, abs=0.05)


def test_arc_pro_b60_int8_is_intels_197_tops():
    hw = get_hardware("arc-pro-b60")
    # 20 Xe2-cores x 8 XMX engines x 256 int8 ops x 2.4 GHz = 196.6 ~ Intel's "197 TOPS"; 192-bit x 19 Gbps = 456 GB/s
    assert hw.int8_tops == pytest.approx(197, abs=0.5)
    assert hw.bandwidth_gbps == 192 / 8 * 19
    assert fp32_lanes_per_core(hw) == 128 and core_cycles_per_s(hw) == pytest.approx(20 * 2.4e9, rel=0.002)


def test_lunar_lake_258v_gpu_is_intels_64_tops():
    hw = get_hardware("core-ultra-7-258v")
    # Arc 140V: 8 Xe2-cores at 1.95 GHz; Intel: 64 GPU TOPS (INT8); LPDDR5X-8533 on a 128-bit bus
    assert hw.int8_tops == pytest.approx(64, abs=0.5)
    assert hw.bandwidth_gbps == pytest.approx(128 / 8 * 8533 / 1e3, abs=0.1)
    assert hw.kind == "soc" and hw.arch == "xe2" and hw.cpu_threads == 4     # 4 Lion Cove P-cores


def test_rtx_pro_6000_max_q_is_the_workstation_chip_at_300_w():
    maxq, ws = get_hardware("rtx-pro-6000-max-q"), get_hardware("rtx-pro-6000")
    # 512-bit GDDR7 at 28 Gbps = 1792 GB/s, 96 GB, 300 W (the Workstation Edition: 600 W)
    assert (maxq.bandwidth_gbps, maxq.memory_gb, maxq.tdp_w) == (512 / 8 * 28, 96, 300)
    assert (ws.bandwidth_gbps, ws.memory_gb, ws.tdp_w) == (1792, 96, 600)
    # NVIDIA's 3,511 AI TOPS = FP4 with 2:4 sparsity = 188 SMs x 8192 x clock -> the FP32 peak at that clock
    ghz = 3511e12 / (188 * 8192) / 1e9
    assert maxq.fp32_tflops == pytest.approx(188 * 128 * 2 * ghz / 1e3, rel=0.002)
    assert mmq_unit(maxq, 512) == "mma" and maxq.arch == "blackwell"


def test_rtx_3050_6gb():
    hw = get_hardware("rtx-3050-6g")
    # NVIDIA: 2304 CUDA cores, 1.47 GHz boost; 96-bit GDDR6 at 14 Gbps; 70 W
    assert hw.fp32_tflops == pytest.approx(2304 * 2 * 1.47e9 / 1e12, abs=0.01)
    assert (hw.bandwidth_gbps, hw.tdp_w) == (96 / 8 * 14, 70)
    assert hw.fp16_accumulate_2x                                   # GeForce


@pytest.mark.parametrize("hw_id, cores, flops_per_cycle, ghz, gbps", [
    ("epyc-9355", 32, 64, 3.55, 12 * 8 * 6.4), ("epyc-9755", 128, 64, 2.7, 12 * 8 * 6.4),
    ("epyc-9965", 192, 64, 2.25, 12 * 8 * 6.4), ("epyc-9374f", 32, 32, 3.85, 12 * 8 * 4.8),
    ("ryzen-9-7950x", 16, 32, 4.5, 2 * 8 * 5.2), ("raspberry-pi-5", 4, 16, 2.4, 4 * 4.267),
])
def test_cpus_are_cores_times_simd_times_clock(hw_id, cores, flops_per_cycle, ghz, gbps):
    hw = get_hardware(hw_id)
    assert hw.kind == "cpu" and hw.cpu_threads == cores
    assert hw.fp32_tflops == pytest.approx(cores * flops_per_cycle * ghz / 1e3, abs=0.001)
    assert hw.bandwidth_gbps == pytest.approx(gbps, abs=0.05)


def test_apple_bins_scale_with_gpu_cores():
    # the same per-core rate as their full chips (catalog notes: M3 0.355 TF/core, M4 an assumed 0.4608)
    assert get_hardware("m3-ultra-60").fp32_tflops == pytest.approx(get_hardware("m3-ultra-80").fp32_tflops * 60 / 80,
                                                                    abs=0.01)
    assert get_hardware("m4-pro-16").fp32_tflops == pytest.approx(get_hardware("m4-pro-20").fp32_tflops * 16 / 20,
                                                                  abs=0.01)
    m5 = get_hardware("m5")
    assert m5.bandwidth_gbps == 153 and m5.arch == "apple-m5"     # Apple: 153 GB/s
    assert any(d.startswith("fp16_tflops, fp32_tflops: DERIVED") and "ASSUMED" in d for d in m5.derived)


def test_every_device_of_calibration_3_resolves():
    """The devices named in the 2025-26 measurements (shared/validation/calibration-3.csv, copied into
    data/validation/ by the accuracy work) are all in the catalog, by the calibration rows' own matcher."""
    path = next((p for p in (REPO / "data" / "validation" / "calibration-3.csv",
                             *(up / "shared" / "validation" / "calibration-3.csv" for up in REPO.parents[:2]))
                 if p.is_file()), None)
    if path is None:
        pytest.skip("calibration-3.csv not present")
    with open(path, newline="", encoding="utf-8") as f:
        seen = {(r["hardware"], float(r["bandwidth_GBps"] or 0), float(r["memory_GB"] or 0)) for r in csv.DictReader(f)}
    missing = [name for name, bw, mem in seen if closest_device(name, bw, mem) is None]
    assert not missing


# every device name of calibration-3 (with the row's bandwidth and memory) -> the catalog entry it must be
CALIBRATION_3_DEVICES = {
    ("AMD EPYC 9274F (24-core Zen 4 Genoa)", 460.8, 0): "epyc-9274f",
    ("AMD EPYC 9374F (32-core Zen 4 Genoa)", 460.8, 0): "epyc-9374f",
    ("AMD Instinct MI50 16GB / Radeon Pro VII (gfx906)", 1024, 16): "mi50-16g",
    ("AMD Instinct MI50 32GB (gfx906)", 1024, 32): "mi50",
    ("AMD Radeon 780M (Phoenix iGPU)", 89.6, 0): "radeon-780m",
    ("AMD Radeon AI PRO R9700", 640, 32): "radeon-ai-pro-r9700",
    ("AMD Ryzen 9 7950X", 83.2, 0): "ryzen-9-7950x",
    ("Apple M2 Max (GPU cores unstated)", 400, 0): "m2-max-unstated",        # CPU-only rows: its CPU cluster
    ("Intel Arc Pro B70", 608, 32): "arc-pro-b70",
    ("Intel Core Ultra 7 258V (Lunar Lake, Arc 140V iGPU)", 136.5, 32): "core-ultra-7-258v",   # the Arc 140V iGPU
    ("Intel Xeon Gold 6138 x2 (dual-socket 20-core Skylake-SP)", 256, 512): "xeon-gold-6138-2s",
    ("NVIDIA GeForce RTX 3050 6GB", 168, 6): "rtx-3050-6g",
}


@pytest.mark.parametrize("row, expect", sorted(CALIBRATION_3_DEVICES.items()))
def test_calibration_3_devices_map_to_their_entry(row, expect):
    hw = closest_device(*row)
    assert hw is not None and hw.id == expect


def test_the_dual_xeon_is_both_sockets_and_streams_from_one():
    hw = get_hardware("xeon-gold-6138-2s")
    # Intel: 20 cores at 2.0 GHz, 6 channels of DDR4-2666 per socket; two AVX-512 FMA units (Gold 6xxx): 64 FLOPs/cycle
    assert hw.bandwidth_gbps == pytest.approx(2 * 6 * 8 * 2.666, abs=0.05)
    assert hw.fp32_tflops == pytest.approx(2 * 20 * 64 * 2.0 / 1e3, abs=0.001) and hw.cpu_threads == 40
    assert hw.cpu_bandwidth_gbps == pytest.approx(hw.bandwidth_gbps / 2, abs=0.1)   # without --numa: one node's memory


@pytest.mark.parametrize("hw_id, units, flops_per_unit_clock, ghz, fp16_per_unit_clock, bus_bits, gbps_per_pin", [
    ("mi50-16g", 60, 128, 1.725, 256, 4096, 2.0),           # GCN: 64 lanes x FMA; packed FP16 2x; HBM2 2.0 Gbps
    ("radeon-780m", 12, 256, 2.7, 512, 128, 5.6),           # RDNA 3: dual-issue FP32, WMMA FP16; DDR5-5600 x 2 ch
    ("radeon-ai-pro-r9700", 64, 256, 2.92, 1024, 256, 20),  # RDNA 4 WMMA FP16 1024 per CU per clock; GDDR6 20 Gbps
    ("arc-pro-b60", 20, 256, 2.4, 2048, 192, 19),           # Xe2: 8 x 16-lane vector engines, 8 XMX per Xe-core
    ("core-ultra-7-258v", 8, 256, 1.95, 2048, 128, 8.533),  # Arc 140V; LPDDR5X-8533
])
def test_gpu_figures_are_units_times_clock_and_bus_times_rate(hw_id, units, flops_per_unit_clock, ghz,
                                                             fp16_per_unit_clock, bus_bits, gbps_per_pin):
    """The catalog keeps the vendor's figure where it states one; AMD's MI50 13.3 TF FP32 is 60 x 128 x 1.725 GHz =
    13.248 rounded up (its 26.5 FP16 = 2 x 13.248): within 0.5 %."""
    hw = get_hardware(hw_id)
    assert hw.fp32_tflops == pytest.approx(units * flops_per_unit_clock * ghz / 1e3, rel=0.005)
    assert hw.fp16_tflops == pytest.approx(units * fp16_per_unit_clock * ghz / 1e3, rel=0.005)
    assert hw.bandwidth_gbps == pytest.approx(bus_bits / 8 * gbps_per_pin, abs=0.1)


@pytest.mark.parametrize("hw_id, bus_bits, mtps, stated", [
    ("m5", 128, 9600, 153), ("m4-pro-16", 256, 8533, 273), ("m3-ultra-60", 1024, 6400, 819),
    ("m2-max-unstated", 512, 6400, 400), ("arc-pro-b70", 256, 19000, 608), ("rtx-pro-4500", 256, 28000, 896),
    ("epyc-9274f", 12 * 64, 4800, 460.8), ("rx-9070", 256, 20000, 640),
])
def test_bandwidth_is_the_bus_times_its_data_rate(hw_id, bus_bits, mtps, stated):
    """The vendors round down (Apple's M2 Max 400 of 409.6): the catalog keeps the stated figure, within 2.5 %."""
    hw = get_hardware(hw_id)
    assert hw.bandwidth_gbps == stated
    assert bus_bits / 8 * mtps / 1e3 == pytest.approx(stated, rel=0.025)
