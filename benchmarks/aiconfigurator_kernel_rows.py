"""Measured kernel rows from AIConfigurator's silicon tables, run under AIConfigurator's own interpreter.

``python aiconfigurator_kernel_rows.py`` prints one JSON object per line: a family (``gemm``, ``decode_attention``,
``prefill_attention``, ``moe``, ``allreduce``), the GPU directory, the shape and the measured latency in
milliseconds. The tables are TensorRT-LLM's (the engine AIConfigurator collects every family for), newest
version per GPU; the shapes are a fixed grid (below) so every GPU is scored on the same kernels.
tokspeed never imports this module: ``bench_kernels_aiconfigurator.py`` runs it as a subprocess.
"""

from __future__ import annotations

import json
import os
import sys

import aiconfigurator_core
import pandas as pd

GPUS = ("h100_sxm", "h200_sxm", "b200_sxm", "gb200", "b300_sxm", "gb300")
GEMM_M = (1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
GEMM_NK = ((4096, 4096), (8192, 8192), (16384, 4096), (4096, 16384), (2048, 7168), (7168, 2048))
GEMM_DTYPES = ("bfloat16", "fp8", "fp8_block", "nvfp4")
DEC_BATCH = (1, 4, 16, 64, 256)
HEADS = ((32, 8), (64, 8))          # (query heads, KV heads), head_dim 128
PF_ISL = (512, 1024, 2048, 4096, 8192)
MOE_SHAPES = ((7168, 2048, 8, 256), (2880, 2880, 4, 128))   # DeepSeek-V3/R1, gpt-oss-120b
MOE_EP = (1, 8)
MOE_TOKENS = (1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
AR_GPUS = (2, 4, 8)


VERSION = "1.3.0rc20"                # the TensorRT-LLM release every family of every GPU here was collected on


def _newest(path: str, name: str) -> str:
    """``name`` in ``VERSION``'s folder under ``path``, else in the newest release that has it."""
    vs = sorted(os.listdir(path), key=lambda v: [int(x) if x.isdigit() else 0 for x in
                                                 v.replace("rc", ".").replace("post", ".").split(".")])
    for v in [VERSION] + vs[::-1]:
        if os.path.exists(os.path.join(path, v, name)):
            return os.path.join(path, v, name)
    raise OSError(f"no {name} under {path}")


def _emit(family, gpu, ms, **shape):
    print(json.dumps({"family": family, "gpu": gpu, "ms": float(ms),
                      **{k: (v.item() if hasattr(v, "item") else v) for k, v in shape.items()}}))


def gemm(root, gpu):
    d = pd.read_parquet(_newest(f"{root}/{gpu}/gemm/trtllm", "gemm_perf.parquet"))
    d = d[d.m.isin(GEMM_M) & d.gemm_dtype.isin(GEMM_DTYPES)]
    d = d[[(n, k) in GEMM_NK for n, k in zip(d.n, d.k)]]
    for r in d.groupby(["gemm_dtype", "m", "n", "k"], as_index=False).latency.median().itertuples():
        _emit("gemm", gpu, r.latency, dtype=r.gemm_dtype, m=r.m, n=r.n, k=r.k)


def attention(root, gpu):
    g = pd.read_parquet(_newest(f"{root}/{gpu}/attention/trtllm", "generation_attention_perf.parquet"))
    c = pd.read_parquet(_newest(f"{root}/{gpu}/attention/trtllm", "context_attention_perf.parquet"))
    for h, kvh in HEADS:
        sel = (g.num_heads == h) & (g.num_key_value_heads == kvh) & (g.head_dim == 128) & (g.window_size == 0) \
            & (g.kv_cache_dtype == "bfloat16") & g.batch_size.isin(DEC_BATCH)
        for r in g[sel].groupby(["batch_size", "isl", "step"], as_index=False).latency.median().itertuples():
            if r.step + r.isl >= 255:
                _emit("decode_attention", gpu, r.latency, batch=r.batch_size, kv=r.isl + r.step, heads=h, kv_heads=kvh)
        sel = (c.num_heads == h) & (c.num_key_value_heads == kvh) & (c.head_dim == 128) & (c.window_size == 0) \
            & (c.kv_cache_dtype == "bfloat16") & c.isl.isin(PF_ISL)
        for r in c[sel].groupby(["batch_size", "isl"], as_index=False).latency.median().itertuples():
            _emit("prefill_attention", gpu, r.latency, batch=r.batch_size, isl=r.isl, heads=h, kv_heads=kvh)


def moe(root, gpu):
    d = pd.read_parquet(_newest(f"{root}/{gpu}/moe/trtllm", "moe_perf.parquet"))
    d = d[(d.distribution == "balanced") & (d.moe_tp_size == 1) & d.moe_ep_size.isin(MOE_EP)
          & d.num_tokens.isin(MOE_TOKENS)]
    d = d[[s in MOE_SHAPES for s in zip(d.hidden_size, d.inter_size, d.topk, d.num_experts)]]
    for r in d.groupby(["moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
                        "moe_ep_size"], as_index=False).latency.min().itertuples():
        _emit("moe", gpu, r.latency, dtype=r.moe_dtype, tokens=r.num_tokens, hidden=r.hidden_size,
              inter=r.inter_size, topk=r.topk, experts=r.num_experts, ep=r.moe_ep_size)


def allreduce(root, gpu):
    d = pd.read_parquet(_newest(f"{root}/{gpu}/comm/trtllm", "custom_allreduce_perf.parquet"))
    d = d[d.num_gpus.isin(AR_GPUS) & (d.allreduce_dtype == "bfloat16")]
    for r in d.itertuples():      # message_size: elements (AIConfigurator's comm collectors size by element)
        _emit("allreduce", gpu, r.latency, gpus=r.num_gpus, elements=r.message_size)


def main() -> int:
    root = os.path.join(os.path.dirname(aiconfigurator_core.__file__), "systems", "data")
    print(json.dumps({"aiconfigurator": getattr(aiconfigurator_core, "__version__", "?")}))
    for gpu in GPUS:
        for fn in (gemm, attention, moe, allreduce):
            try:
                fn(root, gpu)
            except (OSError, KeyError, IndexError) as e:      # a table this GPU lacks
                print(f"{gpu} {fn.__name__}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
