#!/usr/bin/env python3
"""How fast the serving simulation runs: 1,000 requests of one layout, and the two layout searches of issue 28.

    PYTHONPATH=. python benchmarks/bench_serving.py [--rounds 3] [--no-write]

Times (CPU seconds, ``time.process_time``, the median of ``--rounds``; the first round also resolves the model
and fills the step-time grids, so it is reported apart):
1. Llama-3.1-8B FP8 on one H100 with vLLM, 1,000 requests of 1,024/256 tokens: offline, concurrency 64, Poisson
   at 20 requests/s;
2. ``tokspeed serve`` searches: Llama-3.1-70B FP8 on 8 x H200 (TensorRT-LLM, ISL 4000 / OSL 500, TTFT <= 1 s,
   TPOT <= 50 ms) and DeepSeek-V3 FP8 on 8 x H200 (SGLang, 1000/1000, TPOT <= 50 ms).
Writes ``benchmarks/RESULTS_serving.md`` unless ``--no-write``. AIConfigurator is not run here (it is never a
dependency); its figures for the same questions are quoted in issue 28.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokspeed.serving.metrics import SLO  # noqa: E402
from tokspeed.serving.run import Load, evaluate  # noqa: E402
from tokspeed.serving.search import search  # noqa: E402
from tokspeed.serving.worker import Parallelism  # noqa: E402
from tokspeed.serving_api import make_setup  # noqa: E402


def timed(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def cases():
    s8 = make_setup("llama-3.1-8b", "h100-sxm", "vllm", quant="FP8", kv_dtype="fp8", isl=1024, osl=256)
    for name, load in (("1,000 requests offline", Load("offline", n_requests=1000)),
                       ("1,000 requests at concurrency 64", Load("concurrency", concurrency=64, n_requests=1000)),
                       ("1,000 requests Poisson 20/s", Load("rate", rate_rps=20.0, n_requests=1000))):
        yield f"8B / 1 x H100 / vLLM: {name}", lambda load=load: evaluate(s8, Parallelism(), 1, load).output_tok_s
    yield "search 70B / 8 x H200 / TensorRT-LLM", lambda: search(
        make_setup("llama-3.1-70b", "h200-sxm", "tensorrt-llm", quant="FP8", kv_dtype="fp8", isl=4000, osl=500), 8, None,
        SLO(ttft_ms=1000, tpot_ms=50))[0][0].output_tok_s_per_gpu
    yield "search DeepSeek-V3 / 8 x H200 / SGLang", lambda: search(
        make_setup("deepseek-v3", "h200-sxm", "sglang", quant="FP8", kv_dtype="fp8", isl=1000, osl=1000), 8, None,
        SLO(tpot_ms=50))[0][0].output_tok_s_per_gpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = []
    for name, fn in cases():
        first, value = timed(fn)
        rest = [timed(fn)[0] for _ in range(max(a.rounds - 1, 0))]
        rows.append((name, first, statistics.median(rest) if rest else first, value))
        print(f"{name}: first {first:.2f} s, then {rows[-1][2]:.2f} s CPU (result {value:,.0f})")
    if not a.no_write:
        lines = ["# Serving simulation speed (benchmarks/bench_serving.py)", "",
                 f"CPU seconds (process time), first round (resolving, filling the step grids) and the median of the "
                 f"next {a.rounds - 1}.", "", "| case | first (s) | then (s) | result |", "|---|---|---|---|"]
        lines += [f"| {n} | {f:.2f} | {m:.2f} | {v:,.0f} |" for n, f, m, v in rows]
        (ROOT / "benchmarks" / "RESULTS_serving.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
