"""--threads: a CPU engine's share of the cores' SIMD units (engines/cpu.py)."""

from dataclasses import replace

import pytest

import tokspeed
from tokspeed.engines.cpu import note_threads, with_threads
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware


def test_threads_scale_the_simd_peaks():
    hw = get_hardware("ddr5-6000-2ch")
    cores = hw.cpu_threads
    assert cores >= 4
    half = with_threads(hw, cores // 2)
    assert half.fp32_tflops == pytest.approx(hw.fp32_tflops * (cores // 2) / cores)
    assert half.cpu_threads == cores // 2
    # SMT: more threads than cores add no FMA units
    assert with_threads(hw, 4 * cores).fp32_tflops == hw.fp32_tflops
    assert with_threads(hw, None) is hw
    with pytest.raises(UserError):
        with_threads(hw, 0)


def test_two_threads_make_a_q8_decode_compute_bound():
    hw = get_hardware("ddr5-6000-2ch")
    full = tokspeed.predict("llama-3.1-8b", hw, quant="Q8_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    two = tokspeed.predict("llama-3.1-8b", with_threads(hw, 2), quant="Q8_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    assert two.decode.tok_s < full.decode.tok_s
    assert two.decode.bound == "compute"


def test_threads_from_a_row_note():
    assert note_threads("Ryzen-7950X, table labelled AVX2; 16 threads; LLaMA") == 16
    assert note_threads("llama-bench --numa distribute -t 32 -r 20") == 32
    assert note_threads("thread count not stated") is None


def test_an_apple_socs_cpu_only_row_runs_on_its_cpu_cluster():
    # ik_llama.cpp#164: "M2-Max CPU only (ARM_NEON), GPU not used; 8 threads". The row says hardware_kind "cpu",
    # but the device is the M2 Max SoC: its CPU engine sees the CPU cluster, not the GPU's 400 GB/s and 13.6 TFLOPS.
    from tokspeed.calibration.rows import load_rows

    row = next(r for r in load_rows() if r.id == "c3-0193")
    assert row.hw.kind == "soc"
    view = row.hw.cpu_engine_view()
    assert view.bandwidth_gbps == pytest.approx(row.hw.cpu_bandwidth_gbps) and view.bandwidth_gbps < 400
    # 8 P-cores x 3.5 GHz x 4 NEON FMA pipes x 4 FP32 lanes x 2 FLOPs (Avalanche; the catalog's derivation)
    assert view.fp32_tflops == pytest.approx(8 * 3.5e9 * 4 * 4 * 2 / 1e12, rel=0.05)


def test_a_cpus_prefill_rows_are_scored_on_its_simd_peak():
    # a CPU lists no FP16 peak; llama.cpp's CPU kernels compute on its SIMD FP32 (and int8) units, so its prefill rows
    # are answered: the 7950X's 16 cores x 4.5 GHz x 32 FP32 FLOPs per cycle (two 256-bit FMA pipes, Zen 4)
    from tokspeed.calibration.answered import why_unanswered
    from tokspeed.calibration.rows import load_rows

    rows = {r.id: r for r in load_rows()}
    for rid in ("c3-0161", "c3-0225", "c3-0283"):       # Ryzen 9 7950X, EPYC 9274F, dual Xeon Gold 6138
        assert rows[rid].metric == "prefill" and rows[rid].skip == ""
        assert why_unanswered(rows[rid]) is None
    assert rows["c3-0161"].hw.fp32_tflops == pytest.approx(16 * 4.5e9 * 32 / 1e12, rel=0.02)


def test_a_dual_socket_cpu_engine_streams_from_one_sockets_memory():
    # 2 x Xeon Gold 6138, 6 channels of DDR4-2666 each: 2 x 6 x 8 B x 2.666 GT/s = 255.9 GB/s for the machine; without
    # --numa llama.cpp's mmap'd weights sit on one node: a CPU engine reaches one socket's 6 x 8 x 2.666 = 128 GB/s
    hw = get_hardware("xeon-gold-6138-2s")
    assert hw.bandwidth_gbps == pytest.approx(2 * 6 * 8 * 2.666, rel=0.01)
    view = hw.cpu_engine_view()
    assert view.bandwidth_gbps == pytest.approx(6 * 8 * 2.666, rel=0.01)
    assert view.cpu_engine_view().bandwidth_gbps == view.bandwidth_gbps          # a view of a view is the same
    assert get_hardware("ryzen-9-7950x").cpu_engine_view().bandwidth_gbps == get_hardware("ryzen-9-7950x").bandwidth_gbps
    one = tokspeed.predict("qwen3-235b-a22b", hw, quant="Q8_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    assert one.decode.tok_s < tokspeed.predict("qwen3-235b-a22b", replace(hw, cpu_bandwidth_gbps=0.0), quant="Q8_0",
                                                engine="llama.cpp-cpu", prompt=0, gen=16).decode.tok_s / 1.5


def test_numa_distribute_streams_from_every_socket():
    """--numa distribute on the dual Xeon Gold 6138: both sockets' 2 x 6 x 8 B x 2.666 GT/s = 255.9 GB/s, not one's
    128; a qwen3-235b-a22b Q8_0 decode bound by its memory runs ~2x faster; a one-socket CPU is unchanged."""
    from tokspeed.engines.cpu import with_numa

    hw = get_hardware("xeon-gold-6138-2s")
    both = with_numa(hw, "distribute")
    assert both.cpu_engine_view().bandwidth_gbps == pytest.approx(2 * 6 * 8 * 2.666, rel=0.01)
    assert with_numa(get_hardware("ryzen-9-7950x"), "distribute") == get_hardware("ryzen-9-7950x")
    assert with_numa(hw, None) is hw
    with pytest.raises(UserError):
        with_numa(hw, "interleave")
    one = tokspeed.predict("qwen3-235b-a22b", hw, quant="Q8_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    two = tokspeed.predict("qwen3-235b-a22b", both, quant="Q8_0", engine="llama.cpp-cpu", prompt=0, gen=16)
    assert one.decode.bound == two.decode.bound == "memory"
    assert two.decode.tok_s / one.decode.tok_s > 1.5


def test_numa_on_the_command_line(capsys):
    import json

    from tokspeed.cli.main import main

    args = ["predict", "qwen3-30b-a3b", "--hardware", "xeon-gold-6138-2s", "--engine", "llama.cpp-cpu", "--json"]
    assert main(args) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(args + ["--numa", "distribute"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two["decode"]["tok_s"] > 1.3 * one["decode"]["tok_s"]     # memory-bound on one socket's 128 GB/s


@pytest.mark.parametrize("hw, noted", [("rtx-4090", True), ("xeon-gold-6138-2s", False)])
def test_numa_that_changes_nothing_says_so(hw, noted):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "tokspeed", "predict", "llama-3.1-8b", "--hardware", hw, "--numa",
                        "distribute", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ("--numa distribute changes nothing" in r.stderr) is noted, r.stderr
