#!/usr/bin/env python3
"""tokspeed's kernel times next to AIConfigurator's measured kernel tables, per kernel family and GPU.

    PYTHONPATH=. python3 benchmarks/bench_kernels_aiconfigurator.py [--refresh] [--no-write]

The measured rows come from AIConfigurator 0.12's silicon tables (TensorRT-LLM 1.3.0rc20 collections), read by
``aiconfigurator_kernel_rows.py`` under AIConfigurator's own interpreter (``$AICONFIGURATOR_PYTHON``, else
/tmp/aic-venv/bin/python) and kept in ``benchmarks/aiconfigurator_kernels.jsonl`` (``--refresh`` reads them
again). tokspeed's side is ``tokspeed.serving.kernel_shapes`` under the TensorRT-LLM engine profile: the same
operator, rates and device view the serving step uses. Hopper (H100, H200) tables are the ones the kernel
efficiency curves are fitted on (``scripts/fit_kernel_efficiency.py``); Blackwell (B200, GB200, B300, GB300) is
held out: no serving row and no fitted constant covers it. Writes ``benchmarks/RESULTS_kernels.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware
from tokspeed.serving import kernel_shapes as ks

HERE = Path(__file__).resolve().parent
ROWS = HERE / "aiconfigurator_kernels.jsonl"
RESULTS = HERE / "RESULTS_kernels.md"
EXTRACT = HERE / "aiconfigurator_kernel_rows.py"
DEFAULT_PYTHON = "/tmp/aic-venv/bin/python"
ENGINE = "tensorrt-llm"
GPU_IDS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200", "gb200": "gb200",
           "b300_sxm": "b300", "gb300": "gb300"}
HOPPER = ("h100_sxm", "h200_sxm")
GEMM_FMT = {"bfloat16": "BF16", "fp8": "FP8", "fp8_block": "FP8-BLOCK", "nvfp4": "NVFP4"}
MOE_FMT = {"bfloat16": "BF16", "fp8_block": "FP8-BLOCK", "nvfp4": "NVFP4", "w4a8_mxfp4_mxfp8": "MXFP4",
           "w4a16_mxfp4": "MXFP4"}


RESIDUALS = [
    "- Dense GEMMs (BF16, FP8, FP8 block-scaled): the Hopper-fitted path factors carry to Blackwell; per-tensor FP8",
    "  at small M stays slow-predicted (the per-tensor kernels stream their weights at ~2/3 of BF16's on both).",
    "- NVFP4 GEMMs take the FP8 block-scaled path's factors (no Hopper table has FP4): at m <= 256 tokspeed is half",
    "  the measured time on every Blackwell part (an 8192 x 8192 NVFP4 GEMM at m = 1: 22 us measured on B200",
    "  for 38 MB of weights) -- an activation-quantize kernel before each FP4 GEMM, not modelled; at m = 8192 the",
    "  GEMM reaches ~43 % of the 9 PFLOPS dense FP4 figure, below the FP8 path's fraction the transfer assumes.",
    "- MoE grouped GEMM: DeepSeek's FP8 block-scaled experts and the NVFP4 / MXFP4-W4A8 experts on Blackwell",
    "  follow the Hopper-fitted expert factors; W4A16 MXFP4 experts (Hopper's gpt-oss path, forced on Blackwell)",
    "  fit poorly even in-sample: their time is flat from 32 to 256 tokens (all experts touched) and the one-token",
    "  layer is ~60-80 us of fixed time, which no factor on a rate describes.",
    "- Decode attention: at short KV and small batch the kernel is its fixed latency (11 us for one row over",
    "  256 keys on B200); the launch time the step adds per kernel carries part of it; kv stays the prior.",
    "- Prefill attention: fitted on 2k-8k-token prompts (the chunks serving engines schedule); shorter",
    "  prompts run below that efficiency (a length ramp, not modelled).",
    "- All-reduce (collectives model): small messages predicted 7.5 us against 3.0 us measured on 8 x H200 and",
    "  5.0 us on 8 x B200 (the one-shot kernel's latency in `scale/fabrics.toml`); 4-32 MB messages on",
    "  Blackwell NVLink 5 predicted slower than measured at 4 MB and faster at 32 MB.",
]


def load_rows(refresh: bool = False) -> list[dict]:
    """The measured kernel rows (cached file, else read from AIConfigurator's tables)."""
    if refresh or not ROWS.exists():
        python = os.environ.get("AICONFIGURATOR_PYTHON", DEFAULT_PYTHON)
        out = subprocess.run([python, str(EXTRACT)], capture_output=True, text=True, timeout=600, check=True).stdout
        ROWS.write_text(out)
    return [r for r in map(json.loads, ROWS.read_text().splitlines()) if "family" in r]


def family_of(r: dict) -> str:
    """The family x format a row is scored in (GEMM and MoE by format)."""
    return f"{r['family']} {r['dtype']}" if "dtype" in r else r["family"]


def predicted_ms(r: dict, engines: dict, fitted: bool = True) -> float:
    """tokspeed's time of measured row ``r`` in milliseconds (``fitted=False``: the engine profile alone)."""
    hw = get_hardware(GPU_IDS[r["gpu"]])
    eng = engines.get(hw.id) or engines.setdefault(hw.id, get_engine(ENGINE, hw))
    f = r["family"]
    if f == "gemm":
        s = ks.gemm_s(hw, eng, GEMM_FMT[r["dtype"]], r["m"], r["n"], r["k"], fitted=fitted)
    elif f == "decode_attention":
        s = ks.decode_attention_s(hw, eng, "BF16", r["batch"], r["kv"], r["heads"], r["kv_heads"], fitted=fitted)
    elif f == "prefill_attention":
        s = ks.prefill_attention_s(hw, eng, "BF16", r["batch"], r["isl"], r["heads"], r["kv_heads"],
                                   fitted=fitted)
    elif f == "moe":
        s = ks.moe_s(hw, eng, MOE_FMT[r["dtype"]], r["tokens"], r["hidden"], r["inter"], r["topk"], r["experts"],
                     r["ep"], fitted=fitted, fp4_units=r["dtype"] != "w4a16_mxfp4")
    else:
        s = ks.allreduce_s(hw, eng, 2.0 * r["elements"], r["gpus"])
    return s * 1e3


def scored(rows: list[dict]) -> list[dict]:
    engines: dict = {}
    return [{**r, "pred_ms": predicted_ms(r, engines), "prior_ms": predicted_ms(r, engines, False)} for r in rows]


def errors(rows: list[dict], key: str = "pred_ms") -> dict:
    """{(family, gpu): (n, median |pred/meas - 1|, p90, signed median pred/meas - 1)} of column ``key``."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((family_of(r), r["gpu"]), []).append(r[key] / r["ms"] - 1.0)
    out = {}
    for key, es in groups.items():
        a = sorted(abs(e) for e in es)
        out[key] = (len(es), statistics.median(a), a[min(len(a) - 1, int(0.9 * len(a)))], statistics.median(es))
    return out


def table(err: dict, prior: dict, gpus) -> list[str]:
    lines = ["| family | " + " | ".join(gpus) + " |", "|---|" + "---|" * len(gpus)]
    for fam in sorted({k[0] for k in err}):
        cells = []
        for g in gpus:
            e, p = err.get((fam, g)), prior.get((fam, g))
            cells.append(f"{100 * p[1]:.0f} / {100 * p[2]:.0f} → **{100 * e[1]:.0f} / {100 * e[2]:.0f}** "
                         f"({100 * e[3]:+.0f} %, {e[0]})" if e else "")
        lines.append(f"| {fam} | " + " | ".join(cells) + " |")
    return lines


def report(rows: list[dict]) -> str:
    err, prior = errors(rows), errors(rows, "prior_ms")
    held = [g for g in GPU_IDS if g not in HOPPER]
    out = ["# tokspeed kernel times vs AIConfigurator's measured kernel tables", "",
           "Generated by `benchmarks/bench_kernels_aiconfigurator.py`. Measured: AIConfigurator 0.12 silicon tables",
           "(TensorRT-LLM 1.3.0rc20 collections; rows in `benchmarks/aiconfigurator_kernels.jsonl`). tokspeed:",
           "`tokspeed.serving.kernel_shapes` under the TensorRT-LLM profile, kernel time only (no launch or host",
           "time). Cells: median / p90 of |tokspeed / measured - 1|, engine profile alone → with the fitted",
           "kernel-path factors (`tokspeed/serving/kernel_efficiency.toml`), then the fitted signed median and the",
           "rows. All-reduce: the collectives model (`scale/collectives.py`, TensorRT-LLM's algorithm by size), which",
           "the kernel fit does not touch (both columns the same).",
           "",
           "Shapes: GEMM m = 1..8192 over six n x k weights; decode attention batch 1-256 x KV 256-16k, 32/64",
           "query heads, 8 KV heads, head dim 128, BF16 cache; prefill attention batch x 512-8k tokens, causal;",
           "MoE DeepSeek-R1 (7168 x 2048, top-8 of 256) and gpt-oss-120b (2880 x 2880, top-4 of 128), EP 1 and 8,",
           "balanced routing, 1-8192 tokens; all-reduce TensorRT-LLM's custom kernel, BF16, 2/4/8 GPUs.", "",
           "## Blackwell: held out", "",
           "No serving row in the repository and no fitted kernel constant covers B200, GB200, B300 or GB300:",
           "these columns are the held-out check of the kernel mechanisms.", ""]
    out += table(err, prior, held)
    out += ["", "## Hopper: in-sample", "",
            "The kernel efficiency curves (`serving/kernel_efficiency.toml`) are fitted on these tables",
            "(`scripts/fit_kernel_efficiency.py`): in-sample.", ""]
    out += table(err, prior, list(HOPPER))
    out += ["", "## What the held-out residuals say", "", *RESIDUALS]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refresh", action="store_true", help="read AIConfigurator's tables again")
    ap.add_argument("--no-write", action="store_true", help="print only")
    a = ap.parse_args()
    try:
        rows = scored(load_rows(a.refresh))
    except (OSError, subprocess.SubprocessError) as e:
        print(f"cannot read AIConfigurator's tables: {e}", file=sys.stderr)
        return 2
    text = report(rows)
    print(text)
    if not a.no_write:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
