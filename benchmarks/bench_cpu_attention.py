#!/usr/bin/env python3
"""What llama.cpp's CPU attention costs per cached key, against this CPU's FP32 peak.

    python benchmarks/bench_cpu_attention.py [--depths 1024,4096] [--gen 32] [--prompt 512] [--repeat 2]
                                             [--threads 2] [--no-write]

One decode token attends over every cached key: per (key, query head) the one-row kernels do a dot product over the
head dimension D and a multiply-add of D values, 4 D FLOPs. With ``-fa`` (ggml-cpu ops.cpp
``ggml_compute_forward_flash_attn_ext_f16_one_chunk``, split over the keys from 512 on) each key also pays a scalar
online-softmax step (an ``expf``, a branch on the running maximum) that the next multiply-add waits on, and on x86 the
F16 rows are widened and the accumulator narrowed again per key; without ``-fa`` the scores are a ``mul_mat`` of
``ggml_vec_dot_f16`` rows, a soft_max pass and a second ``mul_mat``. This script measures what that costs:

1. two llama-architecture GGUFs written here (tests/files_fixtures.py; Q8_0 weights, zero-valued: timing does not
   depend on the values): SmolLM2-135M's shape (30 layers, 9 query / 3 KV heads of D = 64) and a 128-wide-head
   shape (16 layers, d_model 1024, 8 query / 8 KV heads);
2. llama-bench (scripts/build_llama_server.sh's build, or $TOKSPEED_LLAMA_BENCH) decoding ``--gen`` tokens and
   prefilling a ``--prompt``-token prompt at depth 0 and each ``--depth``, ``-fa 0`` and ``-fa 1``, ``--threads``
   threads (a prompt runs the tiled kernels: tinyBLAS without -fa, ``flash_attn_ext_tiled`` with it);
3. the time a pass gains per cached key (t(depth) - t(0)) / depth, per key, query and query head, and the 4 D FLOPs
   of that work over it as a share of this CPU's FP32 peak (benchmarks/fma_peak.c, as bench_cpu_prefill.py reads it).

The medians over the runs, per kernel, are what priors.toml [CPUATTN] takes as llama.cpp-cpu's one-token attention
shares on x86 (``cpu_kernels.ROW_ATTENTION_SHARE``) and checks the prompt kernels' eta_attn against. It writes the
table into benchmarks/RESULTS-cpu-prefill.md (between its markers).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_cpu_prefill as pre  # noqa: E402
from files_fixtures import SMOLLM2_135M, write_loadable_llama  # noqa: E402
from progress import llama_cpp_binary  # noqa: E402

START, END = "<!-- bench_cpu_attention:start -->", "<!-- bench_cpu_attention:end -->"
WIDE = dict(n_layers=16, d_model=1024, n_heads=8, n_kv_heads=8, d_ff=2816, vocab=32000, tied=False,
            rope_theta=10000.0, context=8192)
SHAPES = {"smollm2-135m (D 64, GQA 3)": SMOLLM2_135M, "wide heads (D 128, MHA)": WIDE}
# (-fa, a prompt test) -> the kernel (cpu_kernels.attention_path: one token, or a prompt of 64 queries or more)
KERNEL = {(0, False): "vec_dot (-fa 0)", (1, False): "fa_row (-fa 1)",
          (0, True): "gemm (-fa 0, prompt)", (1, True): "fa_tiled (-fa 1, prompt)"}


def bench(exe: Path, model: Path, depths: list[int], gen: int, prompt: int, repeat: int, threads: int) -> dict:
    """{(fa, depth, prompt test): seconds per pass (one token; the whole prompt)} from one llama-bench run."""
    args = [str(exe), "-m", str(model), "-p", str(prompt), "-n", str(gen), "-d", ",".join(map(str, [0] + depths)),
            "-fa", "0,1", "-t", str(threads), "-r", str(repeat), "-o", "jsonl"]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=3600).stdout
    return {(r["flash_attn"], r["n_depth"], r["n_prompt"] > 0): max(r["n_prompt"], 1) / r["avg_ts"]
            for r in map(json.loads, out.splitlines())}


def run(depths: list[int], gen: int, prompt: int, repeat: int, threads: int) -> tuple[list[dict], str]:
    exe = llama_cpp_binary("llama-bench")
    if exe is None:
        raise SystemExit("no llama-bench: bash scripts/build_llama_server.sh (or set TOKSPEED_LLAMA_BENCH)")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        fma = pre.build_fma_peak(Path(d))
        peak, how = pre.fp32_peak_flops(fma, threads)
        for name, shape in SHAPES.items():
            t = bench(exe, write_loadable_llama(Path(d) / "m.gguf", shape), depths, gen, prompt, repeat, threads)
            peak = max(peak, pre.fp32_peak_flops(fma, threads)[0])      # a disturbed reading only reads low
            head = shape["d_model"] // shape["n_heads"]
            key_heads = shape["n_layers"] * shape["n_heads"]
            for (fa, pp), kernel in KERNEL.items():
                if pp and not prompt:
                    continue
                queries = prompt if pp else 1     # each of a prompt's queries attends the depth's keys too
                for depth in depths:
                    per_kh = (t[(fa, depth, pp)] - t[(fa, 0, pp)]) / depth / key_heads / queries
                    rows.append({"shape": name, "kernel": kernel, "depth": depth, "D": head,
                                 "token_ms": t[(fa, depth, pp)] * 1e3, "base_ms": t[(fa, 0, pp)] * 1e3,
                                 "ns_per_key_head": per_kh * 1e9, "flops": 4 * head, "peak": peak})
    for r in rows:
        r["share"] = r["flops"] / (r["ns_per_key_head"] * 1e-9) / r["peak"]
    return rows, how


def table(rows: list[dict], how: str, gen: int, prompt: int, repeat: int, threads: int) -> str:
    peak = max(r["peak"] for r in rows)
    lines = ["## CPU decode attention per cached key (llama.cpp, one token)\n",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; llama-bench tg{gen} (and pp{prompt}) at depth 0 "
             "and each depth, "
             f"-t {threads}, -r {repeat}; FP32 peak {peak / 1e9:.0f} GFLOP/s ({how}). The share is 4 D FLOPs per "
             "key and query head over the time a token gains per key and query head, of that peak.\n",
             "| shape | kernel | depth | pass, depth 0 | pass, at depth | per key and query head | share of FP32 "
             "peak |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['kernel']} | {r['depth']:,} | {r['base_ms']:.2f} ms | "
                     f"{r['token_ms']:.2f} ms | {r['ns_per_key_head']:.1f} ns | {r['share']:.3f} |")
    lines.append("")
    for k in KERNEL.values():
        shares = [r["share"] for r in rows if r["kernel"] == k]
        if not shares:
            continue
        lines.append(f"- {k}: median share {statistics.median(shares):.3f} (range {min(shares):.3f}-"
                     f"{max(shares):.3f}, {len(shares)} readings)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", default="1024,4096")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=512, help="also a prompt of this many tokens at each depth (0: skip)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-write", action="store_true", help="print only; leave the results file alone")
    a = ap.parse_args(argv)
    rows, how = run([int(x) for x in a.depths.split(",")], a.gen, a.prompt, a.repeat, a.threads)
    return pre.emit(table(rows, how, a.gen, a.prompt, a.repeat, a.threads), not a.no_write, START, END)


if __name__ == "__main__":
    sys.exit(main())
