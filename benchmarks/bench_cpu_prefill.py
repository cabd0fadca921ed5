#!/usr/bin/env python3
"""What llama.cpp's CPU prompt kernels reach per weight format, against this CPU's FP32 GEMM rate.

    python benchmarks/bench_cpu_prefill.py [--layers 2] [--prompt 512] [--repeat 3] [--rounds 3] [--depth 4096] [--no-write]

llama.cpp's CPU backend does not run a quantized model's prompt as FP32 GEMMs: it quantizes the
activations to 8 bits and multiplies them with the weights' 4/8-bit blocks as integer dot products
(AVX2 maddubs/madd, AVX-VNNI/AVX512-VNNI dpbusd, Arm sdot/i8mm), through the llamafile GEMM and the
repacked Q4_0/Q4_K layouts where the build has them; F16 weights go through F16 -> F32 conversion.
Each format therefore has its own rate. This script measures it:

1. a llama-architecture GGUF at llama-2-7b's layer shapes (d 4096, FFN 11008, 32 heads) with a few
   layers and a tiny vocabulary, random F32 weights (timing does not depend on weight values), then
   F16 / Q8_0 / Q4_0 / Q4_K_M copies made with llama.cpp's own quantizer (llama_model_quantize);
2. this CPU's FP32 peak, read before each format's run by benchmarks/fma_peak.c (chains of 256-bit FMAs
   on every thread, compiled here with the system C compiler): cores x FMA width x the clock they run at,
   the figure the catalog's CPU rows list as fp32_tflops (cores x FLOPs per cycle x clock). The run uses
   the highest reading (on a shared machine a disturbed reading only reads low). Without a C compiler,
   numpy's FP32 GEMM stands in (a lower figure: a BLAS reaches 70-90 %);
3. a ``--prompt``-token prefill at depth 0 (llama-cpp-python, n_batch 512, the machine's physical
   cores), median of ``--repeat``, as FLOP/s of the layers' matmuls (2 x tokens x weight elements;
   attention and the one-row LM head are < 2 % here and are counted too);
4. the same Q4_0 prefill at a KV depth (``--depth``, 4096), paired with one at depth 0 on the same loaded
   model: the extra time is the extra attention's (QK^T and PV over ``depth`` more keys for each prompt
   token), the attention's rate (a difference of two times: noisier than the rows above).

It prints each format's prefill FLOP/s as a fraction of that FP32 peak (and of
llama.cpp's own F32 prefill) and writes the table into benchmarks/RESULTS-cpu-prefill.md (between markers). The fractions are what
``priors.toml`` [CPUPP] takes as llama.cpp-cpu's prefill efficiencies. Needs torch and
llama-cpp-python (``pip install -e '.[measure,llamacpp]'``); a few GB of free disk in $TMPDIR.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULTS = REPO / "benchmarks" / "RESULTS-cpu-prefill.md"
FMA_SRC = REPO / "benchmarks" / "fma_peak.c"
START, END = "<!-- bench_cpu_prefill:start -->", "<!-- bench_cpu_prefill:end -->"
SHAPE = "llama-2-7b"
VOCAB = 512               # a tiny vocabulary: the LM head would otherwise be a large share of a 2-layer model
FORMATS = ("F32", "F16", "Q8_0", "Q4_0", "Q4_K_M")
ATTN_FORMAT = "Q4_0"
FTYPE = {"F16": "LLAMA_FTYPE_MOSTLY_F16", "Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
         "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def build_fma_peak(tmp: Path) -> Path | None:
    """benchmarks/fma_peak.c compiled into ``tmp`` (None: no C compiler, or not an AVX2 + FMA target)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return None
    exe = tmp / "fma_peak"
    r = subprocess.run([cc, "-O2", "-mavx2", "-mfma", "-fopenmp", str(FMA_SRC), "-o", str(exe)],
                       capture_output=True, text=True)
    return exe if r.returncode == 0 else None


def fp32_peak_flops(exe: Path | None, threads: int) -> tuple[float, str]:
    """(FP32 FLOP/s, how it was measured) on ``threads`` threads: the FMA chains of fma_peak.c, or
    numpy's FP32 GEMM (2048^3, median of 5) where it could not be built."""
    if exe is not None:
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                             env={**os.environ, "OMP_NUM_THREADS": str(threads)}).stdout
        return float(out.split()[0]) * 1e9, "FMA peak (fma_peak.c)"
    import numpy as np

    n = 2048
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    a @ a
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        ts.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(ts), "numpy FP32 GEMM (no C compiler: a lower figure)"


def write_models(tmp: Path, layers: int) -> dict:
    """{format: GGUF path}: the F32 file written here, the others quantized from it by llama.cpp."""
    import llama_cpp
    import torch

    from tokspeed.measure.decoder import DecoderConfig
    from tokspeed.measure.gguf_write import write_gguf
    from tokspeed.measure.weights import random_weights
    from tokspeed.models.catalog import get_model

    cfg = DecoderConfig.from_spec(get_model(SHAPE))
    cfg = replace(cfg, n_layers=layers, vocab_size=VOCAB)
    paths = {"F32": write_gguf(tmp / "F32.gguf", cfg, random_weights(cfg, torch.float32))}
    for fmt in FORMATS[1:]:
        out = tmp / f"{fmt}.gguf"
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, FTYPE[fmt])
        rc = llama_cpp.llama_model_quantize(str(paths["F32"]).encode(), str(out).encode(), ctypes.byref(params))
        if rc != 0:
            raise RuntimeError(f"llama_model_quantize to {fmt} failed ({rc})")
        paths[fmt] = out
    return paths


def layer_flops(lm, prompt: int) -> float:
    """FLOPs of a ``prompt``-token prefill at depth 0: every matmul of every layer for every token,
    causal attention (QK^T and PV over i+1 keys for token i), one LM-head row (llama-cpp-python asks
    logits of the last token only)."""
    s = lm.spec
    mats = 0
    for role, (shape, _) in lm.shapes.items():
        if role.startswith("blk.") and len(shape) >= 2:
            n = 1
            for d in shape:
                n *= d
            mats += n
    attn = 4 * s.n_layers * s.n_heads * s.head_dim * prompt * (prompt + 1) / 2
    return 2 * mats * prompt + attn + 2 * VOCAB * s.d_model


def measure_format(path: Path, prompt: int, repeats: int, depth: int = 0) -> tuple[float, object]:
    """(median prefill seconds, the loaded model) of a ``prompt``-token prefill at KV depth ``depth``."""
    from tokspeed.measure.backend_llamacpp import load_llama, measure_point

    lm = load_llama(str(path), depth + prompt + 8)
    measure_point(lm, 0, prompt, 1, warmup=0)          # warm-up: page the weights in, repack
    ts = [measure_point(lm, depth, prompt, 1, warmup=0)["prefill_s"] for _ in range(repeats)]
    return statistics.median(ts), lm


def attention_seconds(path: Path, prompt: int, repeats: int, depth: int) -> tuple[float, float, object]:
    """(median extra seconds of a ``prompt``-token prefill at ``depth`` over the same prefill at depth 0, median
    seconds at ``depth``, the model's spec): the two timed back to back on one loaded model, ``repeats`` pairs,
    so that the machine's drift between minutes cancels in each difference."""
    from tokspeed.measure.backend_llamacpp import load_llama, measure_point

    lm = load_llama(str(path), depth + prompt + 8)
    measure_point(lm, 0, prompt, 1, warmup=0)          # warm-up
    extra, deep = [], []
    for _ in range(repeats):
        t0 = measure_point(lm, 0, prompt, 1, warmup=0)["prefill_s"]
        t1 = measure_point(lm, depth, prompt, 1, warmup=0)["prefill_s"]
        extra.append(t1 - t0)
        deep.append(t1)
    spec = lm.spec
    del lm
    return statistics.median(extra), statistics.median(deep), spec


def attention_flops(spec, prompt: int, depth: int) -> float:
    """The attention FLOPs a ``prompt``-token prefill at ``depth`` does beyond the same prefill at depth 0:
    every token's QK^T and PV over ``depth`` more keys."""
    return 4 * spec.n_layers * spec.n_heads * spec.head_dim * prompt * depth


def run(layers: int, prompt: int, repeats: int, rounds: int, depth: int) -> tuple[list[dict], dict]:
    """Every format measured in each of ``rounds`` rounds (formats interleaved, so a slow minute of a
    shared machine does not fall on one format): per format the median over rounds, and the range. With
    ``depth``, each round also times ATTN_FORMAT's prefill at that KV depth: the extra time is the extra
    attention's (its GFLOP/s row counts only those FLOPs)."""
    import llama_cpp

    from tokspeed.measure.backend_llamacpp import engine_version
    from tokspeed.measure.detect import detect

    threads = detect().physical_cores
    runs = {fmt: [] for fmt in FORMATS}
    attn = []
    with tempfile.TemporaryDirectory(prefix="tokspeed-cpu-prefill-") as d:
        log(f"writing {SHAPE}-shaped GGUFs ({layers} layers) and quantizing them with llama.cpp ...")
        paths = write_models(Path(d), layers)
        exe = build_fma_peak(Path(d))
        for k in range(rounds):
            for fmt in FORMATS:
                ref, how = fp32_peak_flops(exe, threads)
                secs, lm = measure_format(paths[fmt], prompt, repeats)
                rate = layer_flops(lm, prompt) / secs
                del lm
                runs[fmt].append({"tok_s": prompt / secs, "flops_s": rate, "peak": ref, "ratio": rate / ref})
                log(f"  round {k + 1}/{rounds} {fmt:7s} pp{prompt} {prompt / secs:8.1f} tok/s = {rate / 1e9:7.1f} "
                    f"GFLOP/s; FP32 peak next to it {ref / 1e9:7.1f} GFLOP/s: ratio {rate / ref:.2f}")
            if depth:
                ref, _ = fp32_peak_flops(exe, threads)
                extra, deep_s, spec = attention_seconds(paths[ATTN_FORMAT], prompt, repeats, depth)
                rate = attention_flops(spec, prompt, depth) / extra if extra > 0 else float("nan")
                attn.append({"tok_s": prompt / deep_s, "flops_s": rate, "peak": ref, "ratio": rate / ref})
                log(f"  round {k + 1}/{rounds} {ATTN_FORMAT} pp{prompt} at depth {depth}: {prompt / deep_s:.1f} tok/s; "
                    f"the {extra:.2f} s more (paired with depth 0) run the extra attention at {rate / 1e9:.1f} "
                    f"GFLOP/s = {rate / ref:.2f} of the FP32 peak")
        # the FP32 peak is the highest reading of the run: one disturbed by another tenant only reads low
        peak = max(r["peak"] for rs in [*runs.values(), attn] for r in rs)
        for r in (r for rs in [*runs.values(), attn] for r in rs):
            r["peak"], r["ratio"] = peak, r["flops_s"] / peak
        rows = []
        for fmt in FORMATS:
            rs = runs[fmt]
            med = lambda key: statistics.median(r[key] for r in rs)  # noqa: E731
            rows.append({"format": fmt, "bytes": paths[fmt].stat().st_size, "prefill_tok_s": med("tok_s"),
                         "flops_s": med("flops_s"), "peak_flops_s": med("peak"), "peak_how": how,
                         "ratio": med("ratio"), "ratio_lo": min(r["ratio"] for r in rs),
                         "ratio_hi": max(r["ratio"] for r in rs)})
        if attn:
            rows.append({"format": f"{ATTN_FORMAT}, attention at depth {depth}", "bytes": paths[ATTN_FORMAT].stat().st_size,
                         "prefill_tok_s": statistics.median(r["tok_s"] for r in attn),
                         "flops_s": statistics.median(r["flops_s"] for r in attn),
                         "peak_flops_s": statistics.median(r["peak"] for r in attn), "peak_how": how,
                         "ratio": statistics.median(r["ratio"] for r in attn),
                         "ratio_lo": min(r["ratio"] for r in attn), "ratio_hi": max(r["ratio"] for r in attn)})
    info = engine_version(llama_cpp)
    machine = {"cpu": platform.processor() or platform.machine(), "threads": threads,
               "engine": info["engine_version"], "system_info": info["engine_build"]}
    return rows, machine


def table(rows: list[dict], machine: dict, layers: int, prompt: int, repeats: int, rounds: int) -> str:
    from tokspeed.measure.detect import detect

    det = detect()
    lines = [f"Machine: {det.cpu_model or machine['cpu']}, {machine['threads']} threads; {machine['engine']}; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"llama.cpp system info: `{machine['system_info']}`", "",
             f"{SHAPE} layer shapes, {layers} layers, vocabulary {VOCAB}; pp{prompt} at depth 0, median of {repeats} "
             f"(after one warm-up) per round, median of {rounds} rounds (range in brackets); FP32 peak = {rows[0]['peak_how']} on the same threads, the "
             "highest of the readings taken before each format.", "",
             "| format | file | prefill tok/s | GFLOP/s | FP32 peak GFLOP/s | of FP32 peak [range] | of llama.cpp F32 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    f32 = next((r["flops_s"] for r in rows if r["format"] == "F32"), 0.0)
    for r in rows:
        lines.append(f"| {r['format']} | {r['bytes'] / 1e6:.0f} MB | {r['prefill_tok_s']:.1f} | {r['flops_s'] / 1e9:.1f} | "
                     f"{r['peak_flops_s'] / 1e9:.1f} | **{r['ratio']:.2f}** [{r['ratio_lo']:.2f}-{r['ratio_hi']:.2f}] | "
                     f"{r['flops_s'] / f32:.2f} |")
    return "\n".join(lines)


HEAD = ("# CPU prefill and decode kernels per weight format (llama.cpp)\n\nWritten by `python "
        "benchmarks/bench_cpu_prefill.py` and `bench_cpu_matvec.py` (each replaces the section between its "
        "markers).\n\n")


def write_results(text: str, start: str = START, end: str = END) -> None:
    """Replace the section between ``start`` and ``end`` of the results file (each CPU bench has its own pair;
    a missing file or section is created)."""
    old = RESULTS.read_text() if RESULTS.exists() else HEAD
    if start not in old:
        old = old.rstrip("\n") + f"\n\n{start}\n{end}\n"
    pre, rest = old.split(start, 1)
    RESULTS.write_text(f"{pre}{start}\n{text}\n{end}{rest.split(end, 1)[1]}")
    log(f"wrote {RESULTS.relative_to(REPO)}")


def emit(text: str, write: bool, start: str = START, end: str = END) -> int:
    """Print a CPU bench's table and, unless told not to, write it into its section of the results file."""
    print(text)
    if write:
        write_results(text, start, end)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3, help="prefills per format per round (median)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds over all formats (median; range shown)")
    ap.add_argument("--depth", type=int, default=4096,
                    help="also time Q4_0's prefill at this KV depth: the attention's rate (0: skip)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave the results file alone")
    a = ap.parse_args(argv)
    rows, machine = run(a.layers, a.prompt, a.repeat, a.rounds, a.depth)
    text = table(rows, machine, a.layers, a.prompt, a.repeat, a.rounds)
    return emit(text, not a.no_write)


if __name__ == "__main__":
    sys.exit(main())
