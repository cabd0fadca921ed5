#!/usr/bin/env python3
"""Fit the kernel-path efficiency factors of ``tokspeed/serving/kernel_efficiency.toml`` on measured Hopper
kernel tables and score them on Blackwell tables held out.

    PYTHONPATH=. python3 scripts/fit_kernel_efficiency.py [--write]

Rows: ``benchmarks/aiconfigurator_kernels.jsonl`` (AIConfigurator 0.12's TensorRT-LLM 1.3.0rc20 kernel tables,
read by ``benchmarks/aiconfigurator_kernel_rows.py``). For each kernel path, tokspeed's roofline parts of every
row under the engine's prior profile (compute time t_c, memory time t_m; ``serving.kernel_shapes``) give the
model ``t = t_l + max(t_c / c, t_m / s)`` (t_l: the launch time the step adds per kernel); (c, s) minimise
the squared log error over the path's H100 + H200 rows plus
``PRIOR_ROWS`` x (log c)^2 + (log s)^2, i.e. they are shrunk toward 1 (the profile's sourced eta) as if that many
rows agreed with the prior. Paths and the rows that fit them:

- ``native`` (BF16), ``w8a8-fp8`` (per-tensor FP8), ``w8a8-fp8-block`` (DeepSeek's 128 x 128 block scales): dense
  GEMM rows of that format;
- routed experts (``expert_compute`` / ``expert_stream``): the MoE rows of ``w8a8-fp8-block`` (DeepSeek-R1's
  experts) and ``w4a16`` (MXFP4 weights dequantized to BF16: Hopper's gpt-oss experts; no dense GEMM table has
  this path, whose dense factors stay 1);
- ``attention``: prefill rows of ``MIN_CHUNK``+ tokens fit ``attn`` (the math); ``kv`` stays 1: decode
  attention reaches the profile's cache stream at long KV and is latency-bound at short KV (a per-kernel time,
  not a stream fraction);
- a path whose fitted model still misses its rows by more than ``MAX_FIT_ERROR`` (median) keeps the prior;
- ``w4a4-fp4`` (NVFP4) and ``w4a8-mxfp4``: no Hopper part runs them; they take ``w8a8-fp8-block``'s factors
  (block-scaled GEMMs: the scales are read and applied per block the same way), a transfer the Blackwell rows
  test.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware
from tokspeed.serving import kernel_shapes as ks
from tokspeed.serving.kernel_efficiency import TABLE
from tokspeed.toml_writer import dumps

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "benchmarks" / "aiconfigurator_kernels.jsonl"
ENGINE = "tensorrt-llm"
HOPPER = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm"}
BLACKWELL = {"b200_sxm": "b200", "gb200": "gb200", "b300_sxm": "b300", "gb300": "gb300"}
PRIOR_ROWS = 5.0
APPLIES_WHY = ("the engine whose GEMM, grouped-GEMM and attention kernels the tables time (TensorRT-LLM 1.3.0rc20). "
               "vLLM and SGLang call other kernels on these paths at small M (CUTLASS scaled_mm, Marlin FP8, "
               "FlashInfer): applied to them the per-tensor FP8 stream factor made FP8 decode slower than FP8-BLOCK "
               "and DeepSeek-V3 FP8 slower than BF16 (tests/test_bytes_monotone.py), so they take the compute and "
               "attention factors only (compute_engines): their prompt passes run the same class of GEMM and "
               "attention kernels at large M")
# engines that take the compute and attention factors only (kernel_efficiency.kernel_profile): prompt-size kernels of
# the same class, other kernels at decode batches (APPLIES_WHY)
COMPUTE_ENGINES = ["vllm", "sglang"]
MIN_CHUNK = 2048     # prefill attention fits on prompts of 2048+ tokens, the chunks serving engines schedule
GEMM_PATH = {"bfloat16": "native", "fp8": "w8a8-fp8", "fp8_block": "w8a8-fp8-block", "nvfp4": "w4a4-fp4"}
MOE_PATH = {"fp8_block": "w8a8-fp8-block", "w4a16_mxfp4": "w4a16", "nvfp4": "w4a4-fp4",
            "w4a8_mxfp4_mxfp8": "w4a8-mxfp4", "bfloat16": "native"}
FMT = {"native": "BF16", "w8a8-fp8": "FP8", "w8a8-fp8-block": "FP8-BLOCK", "w4a4-fp4": "NVFP4",
       "w4a8-mxfp4": "MXFP4", "w4a16": "MXFP4"}
# a path whose fitted model still misses its own rows by more than this (median) is not described by factors on
# a rate (its kernel is fixed time more than stream or math): it keeps the prior
MAX_FIT_ERROR = 0.30
GRID = np.exp(np.linspace(math.log(0.05), math.log(1.5), 241))


def _split(op_fn):
    """(t_c, t_m, t_l) of the operator ``op_fn`` builds: its roofline time with no bytes, with no FLOPs, and its
    kernels' launch time (``kernel_shapes._timer`` adds it to the roofline)."""
    op, time = op_fn()
    tl = time(replace(op, flops=0.0, weight_bytes=0.0, act_bytes=0.0, kv_read_bytes=0.0, kv_write_bytes=0.0))
    tc = time(replace(op, weight_bytes=0.0, act_bytes=0.0, kv_read_bytes=0.0, kv_write_bytes=0.0)) - tl
    tm = time(replace(op, flops=0.0)) - tl
    return tc, tm, tl


def parts(r: dict, gpus: dict) -> tuple[str, float, float, float] | None:
    """(path, t_c, t_m, t_l) of measured row ``r`` under the engine's prior profile."""
    hw = get_hardware(gpus[r["gpu"]])
    eng = get_engine(ENGINE, hw)
    f = r["family"]
    if f == "gemm":
        path = GEMM_PATH[r["dtype"]]
        tc, tm, tl = _split(lambda: ks.gemm_op(hw, eng, FMT[path], r["m"], r["n"], r["k"], fitted=False,
                                           fp4_units=path != "w4a16"))
    elif f == "moe":
        path = MOE_PATH[r["dtype"]]
        tc, tm, tl = _split(lambda: ks.moe_op(hw, eng, FMT[path], r["tokens"], r["hidden"], r["inter"], r["topk"],
                                          r["experts"], r["ep"], fitted=False, fp4_units=path != "w4a16"))
    elif f == "decode_attention":
        path = "attention decode"
        tc, tm, tl = _split(lambda: ks.decode_attention_op(hw, eng, "BF16", r["batch"], r["kv"], r["heads"], r["kv_heads"],
                                                       fitted=False))
    elif f == "prefill_attention":
        path = "attention prefill"
        tc, tm, tl = _split(lambda: ks.prefill_attention_op(hw, eng, "BF16", r["batch"], r["isl"], r["heads"], r["kv_heads"],
                                                        fitted=False))
    else:
        return None
    return path, tc, tm, tl


def fit(points: list[tuple], fix_c: float | None = None, fix_s: float | None = None
        ) -> tuple[float, float, float]:
    """(c, s, median |model/measured - 1|) minimising the shrunk squared log error over ``points`` (t_c, t_m, t)
    or (t_c, t_m, t_l, t): the model is ``t_l + max(t_c / c, t_m / s)``."""
    cols = [np.array(x) for x in zip(*points)]
    tc, tm, t = cols[0], cols[1], cols[-1]
    tl = cols[2] if len(cols) == 4 else np.zeros_like(t)
    cs = GRID if fix_c is None else np.array([fix_c])
    ss = GRID if fix_s is None else np.array([fix_s])
    best = None
    for c in cs:
        model = tl[None, :] + np.maximum(tc[None, :] / c, tm[None, :] / ss[:, None])
        loss = ((np.log(model / t)) ** 2).sum(axis=1) + PRIOR_ROWS * (math.log(c) ** 2 + np.log(ss) ** 2)
        i = int(np.argmin(loss))
        if best is None or loss[i] < best[0]:
            best = (loss[i], float(c), float(ss[i]))
    _, c, s = best
    err = np.median(np.abs((tl + np.maximum(tc / c, tm / s)) / t - 1.0))
    return c, s, float(err)


HEADER = f"""# Kernel-path efficiency factors of server engines' kernels (tokspeed/serving/kernel_efficiency.py):
# compute / stream multiply the engine profile's eta_compute_format / eta_format for the path's
# format, attn / kv its eta_attn / eta_kv. Written by scripts/fit_kernel_efficiency.py: fitted on
# AIConfigurator 0.12's measured TensorRT-LLM 1.3.0rc20 kernel tables of H100 SXM and H200 SXM
# (benchmarks/aiconfigurator_kernels.jsonl), shrunk toward 1 with {PRIOR_ROWS:g} prior rows;
# Blackwell tables held out (benchmarks/RESULTS_kernels.md).
"""
DIGITS = 3           # factors written to 0.001: the fit's grid steps by 1.4 % (GRID), finer digits say nothing


def _r(v: float) -> float:
    return round(v, DIGITS)


def table_data(out: dict, attn: tuple, n_attn: int) -> dict:
    """kernel_efficiency.toml's tables (``toml_writer.dumps`` writes them) from the fits: ``out`` {path: (c, s,
    median error, rows)} of the dense paths and of the two expert fits (``"<path> experts"``), ``attn`` the prefill
    attention fit (c, s, error) on ``n_attn`` rows."""
    out = dict(out)
    ec, es, ee, en = out.pop("w8a8-fp8-block experts")
    wc, ws, we, wn = out.pop("w4a16 experts")
    expert = {"expert_compute": _r(ec), "expert_stream": _r(es)}
    data = {"applies": {"engines": [ENGINE], "compute_engines": COMPUTE_ENGINES, "source": APPLIES_WHY}}
    for path, (c, s, e, n) in out.items():
        entry = {"compute": _r(c), "stream": _r(s)}
        extra = ""
        if path == "w8a8-fp8-block":
            entry.update({"of": "w8a8-fp8", "formats": ["FP8-BLOCK"], **expert})
            extra = f"; experts: {en} Hopper MoE rows ({100 * ee:.0f} %)"
        entry["source"] = f"fitted on {n} Hopper dense GEMM rows (in-sample median error {100 * e:.0f} %){extra}"
        data[path] = entry
    kept = we <= MAX_FIT_ERROR
    data["w4a16"] = {"compute": 1.0, "stream": 1.0, "expert_compute": _r(wc) if kept else 1.0,
                     "expert_stream": _r(ws) if kept else 1.0,
                     "source": "dense: the prior (no table has a dense W4A16 GEMM); experts: "
                     + (f"{wn} Hopper MoE rows ({100 * we:.0f} %)" if kept else
                        f"the prior: fitted on {wn} Hopper MoE rows the model still missed by {100 * we:.0f} % "
                        f"(median; fitted c {wc:.3f}, s {ws:.3f}): the kernel is fixed time per layer, not a rate")}
    c, s = out["w8a8-fp8-block"][:2]
    for path in ("w4a4-fp4", "w4a8-mxfp4"):
        data[path] = {"compute": _r(c), "stream": _r(s), **expert,
                      "source": "w8a8-fp8-block's factors, dense and experts (block-scaled GEMMs); no Hopper table "
                                "runs this path"}
    data["attention"] = {"attn": _r(attn[0]), "kv": 1.0,
                         "source": f"attn: {n_attn} Hopper prefill rows of {MIN_CHUNK}+ tokens (median error "
                                   f"{100 * attn[2]:.0f} %); kv: the prior (decode attention reaches the cache stream "
                                   "at long KV and is latency at short KV, which no stream factor describes)"}
    return data


def fitted_text() -> str:
    """kernel_efficiency.toml as the fit on the Hopper rows writes it."""
    rows = [r for r in map(json.loads, ROWS.read_text().splitlines()) if "family" in r]
    by: dict = {}
    for r in rows:
        gpus = HOPPER if r["gpu"] in HOPPER else BLACKWELL
        p = parts(r, gpus)
        if p is None:
            continue
        key = p[0] + (" experts" if r["family"] == "moe" else "")
        if (r["family"] != "prefill_attention" or r["isl"] >= MIN_CHUNK):
            by.setdefault((key, r["gpu"] in HOPPER), []).append((p[1], p[2], p[3], r["ms"] * 1e-3))
    out = {}
    for path in ("native", "w8a8-fp8", "w8a8-fp8-block", "w4a16 experts", "w8a8-fp8-block experts"):
        c, s, e = fit(by[(path, True)])
        out[path] = (c, s, e, len(by[(path, True)]))
    attn = fit(by[("attention prefill", True)], fix_s=1.0)
    return dumps(table_data(out, attn, len(by[("attention prefill", True)])), header=HEADER)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write tokspeed/serving/kernel_efficiency.toml")
    a = ap.parse_args()
    text = fitted_text()
    print(text)
    if a.write:
        TABLE.write_text(text)
    return 0

if __name__ == "__main__":
    sys.exit(main())
