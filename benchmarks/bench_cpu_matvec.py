#!/usr/bin/env python3
"""What llama.cpp's CPU decode kernels (one token: matrix-vector products) reach per weight format, with the
weights in cache, against this CPU's FP32 peak.

    python benchmarks/bench_cpu_matvec.py [--rounds 3] [--steps 200] [--no-write]

At batch 1 llama.cpp's CPU backend quantizes the token's activations to 8 bits and takes one integer dot
product per weight row (ggml_vec_dot_q4_0_q8_0 and kin: AVX2 maddubs + madd, AVX-512/AVX-VNNI dpbusd, Arm
sdot). Whether decode is bound by memory or by these dot products depends on the CPU: this script measures
their rate where memory cannot bind, so the model can tell.

1. two llama-architecture GGUFs with random weights, quantized by llama.cpp (Q8_0, Q4_0, Q4_K_M): a "small"
   one (2 layers, d 768, FFN 2048: 28 M FLOPs a token, 8-15 MB, well inside this machine's 32 MB L3) and a
   "tiny" one (1 layer, d 256) whose step is the per-token cost outside the matmuls;
2. the median decode step of each (``--steps`` tokens at depth 0, after warm-up), formats interleaved over
   ``--rounds`` rounds; the small model's step minus the tiny one's is the matmuls' time;
3. that rate as a fraction of the FP32 FMA peak (benchmarks/fma_peak.c; the highest of three readings, as
   a reading disturbed by another tenant only reads low);
4. the 2-layer llama-2-7b-shaped files of bench_cpu_prefill.py, whose weights stream from DRAM: the decode
   step, the GB/s it read beside a plain read probed around it, and the matmuls' rate. On a CPU whose cores
   are few for its memory this is what decode meets: the kernels' rate with compute and memory overlapping
   imperfectly (a roofline's max() assumes they overlap fully), so the prior takes these fractions.

The table goes into benchmarks/RESULTS-cpu-prefill.md between its own markers; priors.toml [CPUMV] takes the
fractions. (A first version used d 1024 / FFN 2816: Q8_0's 28 MB file then sat at the edge of the cache and
read 0.13, memory time included.)
"""

from __future__ import annotations

import argparse
import ctypes
import math
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_cpu_prefill as pre  # noqa: E402

START, END = "<!-- bench_cpu_matvec:start -->", "<!-- bench_cpu_matvec:end -->"
FORMATS = ("Q8_0", "Q4_0", "Q4_K_M")
SHAPES = {"tiny": dict(n_layers=1, d_model=256, n_heads=2, n_kv_heads=2, head_dim=128, d_ff=768, vocab_size=512),
          "small": dict(n_layers=2, d_model=768, n_heads=6, n_kv_heads=6, head_dim=128, d_ff=2048, vocab_size=512)}


def write_models(tmp: Path) -> dict:
    """{(shape, format): GGUF path}, quantized by llama.cpp from F32 files written here."""
    import llama_cpp
    import torch

    from tokspeed.measure.decoder import DecoderConfig
    from tokspeed.measure.gguf_write import write_gguf
    from tokspeed.measure.weights import random_weights
    from tokspeed.models.catalog import get_model

    base = DecoderConfig.from_spec(get_model(pre.SHAPE))
    paths = {}
    for name, kw in SHAPES.items():
        cfg = replace(base, **kw)
        f32 = write_gguf(tmp / f"{name}-F32.gguf", cfg, random_weights(cfg, torch.float32))
        for fmt in FORMATS:
            out = tmp / f"{name}-{fmt}.gguf"
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = getattr(llama_cpp, pre.FTYPE[fmt])
            if llama_cpp.llama_model_quantize(str(f32).encode(), str(out).encode(), ctypes.byref(params)) != 0:
                raise RuntimeError(f"llama_model_quantize to {fmt} failed")
            paths[(name, fmt)] = out
    return paths


def matmul_flops(lm) -> float:
    """FLOPs of one token through the layers' weight matrices (2 per weight)."""
    return 2 * sum(math.prod(shape) for role, (shape, _) in lm.shapes.items()
                   if role.startswith("blk.") and len(shape) >= 2)


def step_seconds(path: Path, steps: int) -> tuple[float, float, float]:
    """(median decode step, matmul FLOPs per token, file bytes) of the GGUF at ``path``."""
    from tokspeed.measure.backend_llamacpp import load_llama, measure_point

    lm = load_llama(str(path), steps + 32)
    measure_point(lm, 0, 0, 8)
    r = measure_point(lm, 0, 0, steps, warmup=5)
    out = (1 / r["decode_tok_s_median"], matmul_flops(lm), path.stat().st_size)
    del lm
    return out


def streaming(tmp: Path, rounds: int, steps: int, threads: int, exe) -> list[dict]:
    """The 2-layer llama-2-7b-shaped files of bench_cpu_prefill (231-435 MB: the weights stream from DRAM), each
    format's median decode step between two plain-read probes (torch sum over 1 GiB, this VM's bandwidth drifts):
    the matmuls' GFLOP/s and the GB/s the step read, beside what a plain read reached."""
    from tokspeed.measure.probe_cpu import probe_bandwidth

    paths = pre.write_models(tmp, 2)
    runs = {fmt: [] for fmt in FORMATS}
    for k in range(rounds):
        for fmt in FORMATS:
            before = probe_bandwidth(2**30, 3)[0].value
            step, flops, _ = step_seconds(paths[fmt], steps)
            read = (before + probe_bandwidth(2**30, 3)[0].value) / 2
            nbytes = paths[fmt].stat().st_size
            runs[fmt].append((step, flops, nbytes, read))
            pre.log(f"  streaming round {k + 1}/{rounds} {fmt}: {step * 1e3:.2f} ms a token, {nbytes / step / 1e9:.1f} GB/s "
                    f"(plain read {read:.1f}), {flops / step / 1e9:.1f} GFLOP/s")
    peak, how = pre.fp32_peak_flops(exe, threads)
    rows = []
    for fmt in FORMATS:
        step = statistics.median(r[0] for r in runs[fmt])
        _, flops, nbytes, _ = runs[fmt][0]
        rows.append({"format": fmt, "bytes": nbytes, "step_ms": step * 1e3, "gbs": nbytes / step / 1e9,
                     "read_gbs": statistics.median(r[3] for r in runs[fmt]), "flops_s": flops / step, "peak": peak,
                     "peak_how": how, "ratio": flops / step / peak})
    return rows


def run(rounds: int, steps: int) -> tuple[list[dict], list[dict]]:
    """(in-cache rows, streaming rows)."""
    from tokspeed.measure.detect import detect

    threads = detect().physical_cores
    times = {}
    with tempfile.TemporaryDirectory(prefix="tokspeed-cpu-matvec-") as d:
        paths = write_models(Path(d))
        for k in range(rounds):
            for fmt in FORMATS:
                for name in SHAPES:
                    times.setdefault((name, fmt), []).append(step_seconds(paths[(name, fmt)], steps))
                pre.log(f"  round {k + 1}/{rounds} {fmt}: small {times[('small', fmt)][-1][0] * 1e3:.3f} ms, "
                        f"tiny {times[('tiny', fmt)][-1][0] * 1e3:.3f} ms a token")
        exe = pre.build_fma_peak(Path(d))
        peak, how = pre.fp32_peak_flops(exe, threads)
        stream = streaming(Path(d), max(2, rounds - 1), 32, threads, exe)
        # the FP32 peak is the highest reading (one disturbed by another tenant only reads low)
        peak = max(peak, pre.fp32_peak_flops(exe, threads)[0], *(r["peak"] for r in stream))
        for r in stream:
            r["peak"], r["ratio"] = peak, r["flops_s"] / peak
        cache = []
        for fmt in FORMATS:
            small = statistics.median(t for t, _, _ in times[("small", fmt)])
            tiny = statistics.median(t for t, _, _ in times[("tiny", fmt)])
            _, flops, nbytes = times[("small", fmt)][0]
            rate = flops / (small - tiny)
            cache.append({"format": fmt, "bytes": nbytes, "small_ms": small * 1e3, "tiny_ms": tiny * 1e3,
                          "flops": flops, "flops_s": rate, "peak": peak, "peak_how": how, "ratio": rate / peak})
            pre.log(f"  {fmt}: {flops / 1e6:.0f} MFLOP in {(small - tiny) * 1e3:.3f} ms = {rate / 1e9:.1f} GFLOP/s "
                    f"= {rate / peak:.2f} of the FP32 peak ({peak / 1e9:.0f} GFLOP/s)")
    return cache, stream


def table(cache: list[dict], stream: list[dict], rounds: int, steps: int) -> str:
    import time

    from tokspeed.measure.detect import detect

    det = detect()
    lines = ["### Decode (matrix-vector) rate per format -- `benchmarks/bench_cpu_matvec.py`", "",
             f"Machine: {det.cpu_model}, {det.physical_cores} threads; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; FP32 peak = {cache[0]['peak_how']}.", "",
             f"**Weights in cache** (the kernels alone): median step over {steps} tokens, median of {rounds} rounds; "
             "matmul time = small model's step - tiny model's step.", "",
             "| format | small model file | step, small | step, tiny | matmul GFLOP/s | of FP32 peak |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in cache:
        lines.append(f"| {r['format']} | {r['bytes'] / 1e6:.1f} MB | {r['small_ms']:.3f} ms | {r['tiny_ms']:.3f} ms | "
                     f"{r['flops_s'] / 1e9:.1f} | {r['ratio']:.2f} |")
    lines += ["", "**Weights streaming from DRAM** (2-layer llama-2-7b-shaped files, 32 steps, median of rounds; "
              "a plain read probed before and after each): what decode meets, compute and memory together. "
              "priors.toml [CPUMV] takes these fractions.", "",
              "| format | file | step | read GB/s (plain read) | matmul GFLOP/s | of FP32 peak |",
              "|---|---:|---:|---:|---:|---:|"]
    for r in stream:
        lines.append(f"| {r['format']} | {r['bytes'] / 1e6:.0f} MB | {r['step_ms']:.2f} ms | {r['gbs']:.1f} "
                     f"({r['read_gbs']:.1f}) | {r['flops_s'] / 1e9:.1f} | **{r['ratio']:.2f}** |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--no-write", action="store_true", help="print only; leave the results file alone")
    a = ap.parse_args(argv)
    cache, stream = run(a.rounds, a.steps)
    text = table(cache, stream, a.rounds, a.steps)
    return pre.emit(text, not a.no_write, START, END)


if __name__ == "__main__":
    sys.exit(main())
