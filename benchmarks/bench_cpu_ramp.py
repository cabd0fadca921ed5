#!/usr/bin/env python3
"""How llama.cpp's CPU matmul rate grows with the tokens in a pass, from one token (decode) to a prompt chunk.

    python benchmarks/bench_cpu_ramp.py [--repeat 5] [--no-write]

One token's matmuls run at the int8 matrix-vector rate (bench_cpu_matvec.py), a 512-token chunk at the GEMM
rate (bench_cpu_prefill.py). In between, each weight block's loading, unpacking and scaling is done once per
pass and shared by its T tokens, while the multiply-adds grow with T: time(T) = a + b x T per weight block, so
rate(T) = T / (a + b T) with 1 / (a + b) the one-token rate and 1 / b the GEMM rate (``timing.int8_bound``).
This script times prefills of T = 1 ... 512 tokens at depth 0 on the 2-layer llama-2-7b-shaped Q4_0 and Q4_K_M
files of bench_cpu_prefill.py (written and quantized here), as fractions of the FP32 FMA peak (fma_peak.c,
highest of the readings), next to that model's curve through the measured T = 1 and T = 512 points. The table
goes into benchmarks/RESULTS-cpu-prefill.md between its own markers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_cpu_prefill as pre  # noqa: E402

START, END = "<!-- bench_cpu_ramp:start -->", "<!-- bench_cpu_ramp:end -->"
FORMATS = ("Q4_0", "Q4_K_M")
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 512)


def ramp(path: Path, repeats: int) -> dict:
    """{T: median seconds of a T-token prefill at depth 0}, and the FLOPs of each."""
    from tokspeed.measure.backend_llamacpp import load_llama, measure_point

    lm = load_llama(str(path), max(TOKENS) + 16)
    measure_point(lm, 0, 64, 1, warmup=0)                 # warm-up: page in, repack
    out = {}
    for t in TOKENS:
        secs = statistics.median(measure_point(lm, 0, t, 1, warmup=0)["prefill_s"] for _ in range(repeats))
        out[t] = (secs, pre.layer_flops(lm, t))
    del lm
    return out


def run(repeats: int) -> tuple[dict, float, str]:
    from tokspeed.measure.detect import detect

    threads = detect().physical_cores
    with tempfile.TemporaryDirectory(prefix="tokspeed-cpu-ramp-") as d:
        paths = pre.write_models(Path(d), 2)
        exe = pre.build_fma_peak(Path(d))
        peaks = [pre.fp32_peak_flops(exe, threads)]
        rows = {}
        for fmt in FORMATS:
            rows[fmt] = ramp(paths[fmt], repeats)
            peaks.append(pre.fp32_peak_flops(exe, threads))
            pre.log(f"  {fmt}: " + " ".join(f"T={t} {f / s / 1e9:.0f}" for t, (s, f) in rows[fmt].items()) + " GFLOP/s")
    peak, how = max(peaks)
    return rows, peak, how


def table(rows: dict, peak: float, how: str, repeats: int) -> str:
    import time

    from tokspeed.measure.detect import detect

    det = detect()
    lines = ["### Rate by tokens in the pass -- `benchmarks/bench_cpu_ramp.py`", "",
             f"Machine: {det.cpu_model}, {det.physical_cores} threads; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"2-layer llama-2-7b-shaped files, prefill of T tokens at depth 0, median of {repeats}; fraction of the "
             f"FP32 peak ({how}, {peak / 1e9:.0f} GFLOP/s). Model: T / (a + b T) through the measured T = 1 and "
             "T = 512 points.", "",
             "| format | " + " | ".join(f"T={t}" for t in TOKENS) + " |", "|---|" + "---:|" * len(TOKENS)]
    for fmt, pts in rows.items():
        frac = {t: f / s / peak for t, (s, f) in pts.items()}
        one, gemm = frac[TOKENS[0]], frac[TOKENS[-1]]
        a, b = 1 / one - 1 / gemm, 1 / gemm
        lines.append(f"| {fmt} measured | " + " | ".join(f"{frac[t]:.2f}" for t in TOKENS) + " |")
        lines.append(f"| {fmt} model | " + " | ".join(f"{t / (a + b * t):.2f}" for t in TOKENS) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-write", action="store_true", help="print only; leave the results file alone")
    a = ap.parse_args(argv)
    rows, peak, how = run(a.repeat)
    text = table(rows, peak, how, a.repeat)
    return pre.emit(text, not a.no_write, START, END)


if __name__ == "__main__":
    sys.exit(main())
