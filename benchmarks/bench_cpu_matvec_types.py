#!/usr/bin/env python3
"""What llama.cpp's CPU decode kernels reach per ggml weight type, through a llama-bench build, repacked or not.

    python benchmarks/bench_cpu_matvec_types.py [--llama-bench PATH] [--rounds 3] [--threads 2] [--no-write]

bench_cpu_matvec.py measures three formats through the Python bindings; this one measures every type a GGUF
commonly holds through ``llama-bench`` (default: the build scripts/build_llama_server.sh caches), each with its
``--repack 1`` (today's default: a repacked type runs repack.cpp's gemv) and ``--repack 0`` (its vec_dot):

1. per type, two llama-architecture GGUFs whose matrices are random bytes of that type (timing does not depend on
   the values; each 2-byte field's exponent bits are cleared so no scale is Inf or NaN): "small" (2 layers, d 768,
   FFN 2,048, 6 heads of 128: 28.3 MFLOP of matmuls a token, 8-18 MB, inside this machine's cache) and "tiny"
   (1 layer, d 256) whose step is the per-token cost outside the matmuls;
2. ``llama-bench -p 0 -n 1000 -t THREADS`` for each (tg1000: the mean step over 1,000 tokens at depth 0), the types
   interleaved over ``--rounds`` rounds, the median taken; the matmuls' time = small's step - tiny's step;
3. that rate as a fraction of the FP32 FMA peak on the same threads (benchmarks/fma_peak.c, 256-bit FMA chains).

The table goes into benchmarks/RESULTS-cpu-prefill.md between its own markers.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_cpu_prefill as pre  # noqa: E402

START, END = "<!-- bench_cpu_matvec_types:start -->", "<!-- bench_cpu_matvec_types:end -->"
TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "IQ4_XS", "MXFP4", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
SHAPES = {"small": dict(n_layers=2, d=768, ff=2048, heads=6), "tiny": dict(n_layers=1, d=256, ff=768, heads=2)}
HEAD_DIM, VOCAB, STEPS = 128, 512, 1000


def matmul_flops(shape: dict) -> float:
    """FLOPs of one token's weight matmuls in a model of ``shape`` (q, k, v, o and gate, up, down per layer)."""
    q = shape["heads"] * HEAD_DIM
    return 2.0 * shape["n_layers"] * (4 * q * shape["d"] + 3 * shape["ff"] * shape["d"])


def write_model(path: Path, qtype: str, shape: dict) -> None:
    """A GGUF of ``shape`` whose matrices are random bytes of ggml type ``qtype`` (norms, embedding, head F32)."""
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter, LlamaFileType

    rng = np.random.default_rng(0)
    t = GGMLQuantizationType[qtype]
    block, size = GGML_QUANT_SIZES[t]
    d, ff, heads = shape["d"], shape["ff"], shape["heads"]
    q = heads * HEAD_DIM
    w = GGUFWriter(str(path), "llama")
    for add, value in (("name", "matvec-types"), ("block_count", shape["n_layers"]), ("context_length", 4096),
                       ("embedding_length", d), ("feed_forward_length", ff), ("head_count", heads),
                       ("head_count_kv", heads), ("key_length", HEAD_DIM), ("value_length", HEAD_DIM),
                       ("rope_dimension_count", HEAD_DIM), ("rope_freq_base", 10000.0),
                       ("layer_norm_rms_eps", 1e-5), ("vocab_size", VOCAB), ("tokenizer_model", "no_vocab")):
        getattr(w, "add_" + add)(value)
    w.add_file_type(LlamaFileType.ALL_F32)

    def matrix(name: str, rows: int, cols: int) -> None:
        raw = rng.integers(0, 256, (rows, cols // block * size), dtype=np.uint8)
        raw[:, 1::2] &= 0x3B        # the high byte of every 2-byte field: exponent below Inf / NaN
        w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=t)

    w.add_tensor("token_embd.weight", rng.standard_normal((VOCAB, d)).astype(np.float32))
    w.add_tensor("output_norm.weight", np.ones(d, np.float32))
    w.add_tensor("output.weight", (rng.standard_normal((VOCAB, d)) * 0.02).astype(np.float32))
    for i in range(shape["n_layers"]):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(d, np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.ones(d, np.float32))
        for name, rows, cols in (("attn_q", q, d), ("attn_k", q, d), ("attn_v", q, d), ("attn_output", d, q),
                                 ("ffn_gate", ff, d), ("ffn_up", ff, d), ("ffn_down", d, ff)):
            matrix(p + name + ".weight", rows, cols)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def step_seconds(bench: Path, model: Path, threads: int, repack: int) -> float:
    """llama-bench's mean decode step (s) over STEPS tokens at depth 0."""
    out = subprocess.run([str(bench), "-m", str(model), "-p", "0", "-n", str(STEPS), "-t", str(threads), "-r", "1",
                          "--repack", str(repack), "-o", "csv"], capture_output=True, text=True, check=True,
                         timeout=600).stdout
    row = list(csv.DictReader(io.StringIO(out)))[-1]
    seconds = float(row["avg_ns"]) / STEPS / 1e9
    if not 0 < seconds < 60:        # NaN, negative or absurd: not a step time
        raise ValueError(f"avg_ns {row['avg_ns'][:40]!r}")
    return seconds


def measure(bench: Path, tmp: Path, rounds: int, threads: int) -> list[dict]:
    for qtype in TYPES:
        for name, shape in SHAPES.items():
            write_model(tmp / f"{name}-{qtype}.gguf", qtype, shape)
    steps: dict = {}
    for _ in range(rounds):
        for qtype in TYPES:
            for repack in (1, 0):
                steps.setdefault((qtype, repack), []).append(
                    step_seconds(bench, tmp / f"small-{qtype}.gguf", threads, repack))
            steps.setdefault((qtype, "tiny"), []).append(step_seconds(bench, tmp / f"tiny-{qtype}.gguf", threads, 1))
    flops = matmul_flops(SHAPES["small"]) - matmul_flops(SHAPES["tiny"])
    out = []
    for qtype in TYPES:
        tiny = statistics.median(steps[(qtype, "tiny")])
        rates = {rp: flops / (statistics.median(steps[(qtype, rp)]) - tiny) for rp in (1, 0)}
        out.append({"type": qtype, "size": (tmp / f"small-{qtype}.gguf").stat().st_size, "tiny": tiny,
                    "step": {rp: statistics.median(steps[(qtype, rp)]) for rp in (1, 0)}, "rate": rates})
    return out


def table(rows: list[dict], peak: float, how: str, threads: int, bench: Path) -> str:
    from tokspeed.measure.detect import detect

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    version = (bench.parent / "VERSION").read_text().strip() if (bench.parent / "VERSION").exists() else "?"
    lines = [START, "### Decode (matrix-vector) rate per ggml type, through llama-bench -- "
             "`benchmarks/bench_cpu_matvec_types.py`", "",
             f"Machine: {detect().cpu_model}, {threads} threads; {when}; llama-bench of llama-cpp-python {version}'s "
             f"llama.cpp (scripts/build_llama_server.sh); FP32 peak {peak / 1e9:.0f} GFLOP/s ({how}). Weights in "
             f"cache; matmul time = small model's step - tiny model's step, medians of the rounds.", "",
             "| type | small file | step, repacked | step, vec_dot | step, tiny | GFLOP/s repacked | GFLOP/s vec_dot "
             "| of FP32 peak, repacked | of FP32 peak, vec_dot |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['type']} | {r['size'] / 1e6:.1f} MB | {r['step'][1] * 1e3:.3f} ms | "
                     f"{r['step'][0] * 1e3:.3f} ms | {r['tiny'] * 1e3:.3f} ms | {r['rate'][1] / 1e9:.1f} | "
                     f"{r['rate'][0] / 1e9:.1f} | {r['rate'][1] / peak:.2f} | {r['rate'][0] / peak:.2f} |")
    lines.append(END)
    return "\n".join(lines)


def _count(lo: int, hi: int):
    """An argparse type: a whole number in [lo, hi] (one clear line otherwise)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{n} is outside {lo}..{hi}")
        return n
    return parse


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cache = Path(os.environ.get("TOKSPEED_CACHE", Path.home() / ".cache" / "tokspeed"))
    found = sorted(cache.glob("llama-server-*/llama-bench"))
    ap.add_argument("--llama-bench", type=Path, default=found[-1] if found else None)
    ap.add_argument("--rounds", type=_count(1, 100), default=3)
    ap.add_argument("--threads", type=_count(1, 1024), default=2)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    if args.llama_bench is None or not args.llama_bench.is_file():
        print("bench_cpu_matvec_types.py: no llama-bench: run scripts/build_llama_server.sh or give --llama-bench",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        exe = pre.build_fma_peak(Path(d))
        peak, how = pre.fp32_peak_flops(exe, args.threads)
        try:
            rows = measure(args.llama_bench, Path(d), args.rounds, args.threads)
        except (OSError, subprocess.SubprocessError, KeyError, IndexError, ValueError, ZeroDivisionError) as e:
            # not a llama-bench, one that failed, or CSV without a usable avg_ns: one line, nothing written
            print(f"bench_cpu_matvec_types.py: {ascii(args.llama_bench.name)} gave no usable timing "
                  f"({type(e).__name__})", file=sys.stderr)
            return 2
        peak = max(peak, pre.fp32_peak_flops(exe, args.threads)[0])   # a reading disturbed by a tenant reads low
    text = table(rows, peak, how, args.threads, args.llama_bench)
    print(text)
    if not args.no_write:
        results = REPO / "benchmarks" / "RESULTS-cpu-prefill.md"
        old = results.read_text()
        new = (old[:old.index(START)] + text + old[old.index(END) + len(END):]) if START in old else \
            old.rstrip("\n") + "\n\n" + text + "\n"
        results.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
