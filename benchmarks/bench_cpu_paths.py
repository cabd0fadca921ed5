#!/usr/bin/env python3
"""What each of llama.cpp's CPU prompt-kernel paths reaches of its units' peak on this machine.

    python benchmarks/bench_cpu_paths.py [--layers 1] [--prompt 256] [--repeat 3] [--rounds 2] [--no-write]

``tokspeed.engines.cpu_kernels`` names the path a weight type takes on a CPU (repacked int8 GEMM, AMX tiles,
llamafile tinyBLAS, per-row vec_dot, float) and the units it runs on. This script picks one format per path
this CPU's ISA reaches (the library's own ``gemm_path`` on this machine's units, read from /proc/cpuinfo flags),
writes llama-2-7b-layer-shaped GGUFs of them (benchmarks/bench_cpu_prefill.py's writer and llama.cpp's quantizer),
times a ``--prompt``-token prefill of each (median of ``--repeat`` after a warm-up, median of ``--rounds`` with the
formats interleaved) and divides its matmul FLOP/s by the path's unit peak (``cpu_kernels.path_peak``) on a device
whose FP32 figure is this machine's FMA peak at its widest SIMD (benchmarks/fma_peak.c, 512-bit with AVX-512),
read next to each format (the highest reading: a shared machine only reads low). The ratios are the measured
``eta_compute_format`` of paths the calibration rows do not reach (priors.toml [CPUPATH]). Writes its table into
benchmarks/RESULTS-cpu-prefill.md between its markers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_cpu_prefill as base  # noqa: E402

START, END = "<!-- bench_cpu_paths:start -->", "<!-- bench_cpu_paths:end -->"
# one format per path, where the ISA takes it there (cpu_kernels.gemm_path decides which path each one is)
CANDIDATES = {"Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0", "IQ4_NL": "LLAMA_FTYPE_MOSTLY_IQ4_NL",
              "Q5_0": "LLAMA_FTYPE_MOSTLY_Q5_0", "Q3_K_S": "LLAMA_FTYPE_MOSTLY_Q3_K_S",
              "F16": "LLAMA_FTYPE_MOSTLY_F16"}
FLAG_UNITS = {"avx2": "avx2", "avx512f": "avx512", "avx512_vnni": "avx512-vnni", "avx512_bf16": "avx512-bf16",
              "amx_int8": "amx", "avx_vnni": "avx-vnni", "asimddp": "neon-dotprod", "i8mm": "i8mm", "sve": "sve"}


def this_machine(fp32_flops: float, threads: int):
    """This CPU as a catalog device: its ISA units from /proc/cpuinfo, its FP32 figure the measured FMA peak, a 512-bit
    datapath where it has AVX-512 (the arch word that says so)."""
    from tokspeed.hardware.spec import Hardware

    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("flags", "Features")):
            flags |= set(line.split(":", 1)[1].split())
    units = tuple(sorted({u for f, u in FLAG_UNITS.items() if f in flags}))
    x86 = "avx2" in units
    arch = "sapphire-rapids" if "amx" in units else None
    return Hardware(id="this-cpu", name="this machine", kind="cpu", vendor="Intel" if x86 else "Arm", memory_gb=1,
                    bandwidth_gbps=10, fp32_tflops=fp32_flops / 1e12, cpu_threads=threads, arch=arch,
                    matrix_units=units, int8_tops=(4 if {"avx512-vnni", "neon-dotprod"} & set(units) else 2)
                    * fp32_flops / 1e12)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)

    import llama_cpp

    from tokspeed.engines.cpu_kernels import gemm_path, path_peak
    from tokspeed.engines.profile import get_engine
    from tokspeed.measure.backend_llamacpp import engine_version
    from tokspeed.measure.detect import detect

    threads = detect().physical_cores
    engine = get_engine("llama.cpp-cpu")
    base.FORMATS = ("F32", *CANDIDATES)
    base.FTYPE = CANDIDATES
    runs = {f: [] for f in CANDIDATES}
    with tempfile.TemporaryDirectory(prefix="tokspeed-cpu-paths-") as d:
        tmp = Path(d)
        exe = tmp / "fma_peak512"
        subprocess.run(["cc", "-O2", "-mavx512f", "-mfma", "-fopenmp", str(base.FMA_SRC), "-o", str(exe)], check=True)
        base.log("writing the GGUFs ...")
        paths = base.write_models(tmp, a.layers)
        peaks = []
        for k in range(a.rounds):
            for fmt in CANDIDATES:
                peaks.append(base.fp32_peak_flops(exe, threads)[0])
                secs, lm = base.measure_format(paths[fmt], a.prompt, a.repeat)
                runs[fmt].append(base.layer_flops(lm, a.prompt) / secs)
                del lm
                base.log(f"  round {k + 1} {fmt:7s} {runs[fmt][-1] / 1e9:7.1f} GFLOP/s (FMA peak {peaks[-1] / 1e9:.1f})")
    peak = max(peaks)
    hw = this_machine(peak, threads)
    info = engine_version(llama_cpp)
    lines = [f"Machine: {detect().cpu_model}, {threads} threads; {info['engine_version']}; units {', '.join(hw.matrix_units)}",
             f"llama.cpp system info: `{info['engine_build']}`", "",
             f"llama-2-7b layer shapes, {a.layers} layer(s), pp{a.prompt}; median of {a.repeat} per round, median of "
             f"{a.rounds} rounds; FP32 peak {peak / 1e9:.1f} GFLOP/s (fma_peak.c at 512 bits, highest reading).", "",
             "| format | path | GFLOP/s | unit peak GFLOP/s | units | of unit peak |", "|---|---|---:|---:|---|---:|"]
    for fmt, rs in runs.items():
        path = gemm_path(engine, hw, fmt)
        up = path_peak(hw, path)
        rate = statistics.median(rs)
        lines.append(f"| {fmt} | {path} | {rate / 1e9:.1f} | {up.flops / 1e9:.1f} | {up.label} | **{rate / up.flops:.3f}** |")
    return base.emit("\n".join(lines), not a.no_write, START, END)


if __name__ == "__main__":
    sys.exit(main())
