"""MoE layer latencies under skewed and balanced routing from AIConfigurator's silicon tables, run under
AIConfigurator's own interpreter (it needs pandas; tokspeed never imports this module).

    /tmp/aic-venv/bin/python benchmarks/aiconfigurator_moe_routing.py > benchmarks/aiconfigurator_moe_routing.jsonl

AIConfigurator 0.12 collects TensorRT-LLM's MoE layer (``moe_perf.parquet``, TensorRT-LLM 1.3.0rc20 on H200 SXM)
with tokens routed to the experts ``balanced`` and by a power law (``power_law_1.01``, its default workload
distribution, ``aiconfigurator_core/sdk/config.py`` ``workload_distribution``). One JSON object per line: the shape
(weight format, hidden, expert FFN width, experts, top-k, EP size), the tokens, both latencies in milliseconds.
``scripts/fit_moe_routing.py`` turns them into ``tokspeed/serving/moe_routing.toml``.
"""

from __future__ import annotations

import json
import os

import aiconfigurator_core
import pandas as pd

TABLE = os.path.join(os.path.dirname(aiconfigurator_core.__file__), "systems", "data", "h200_sxm", "moe", "trtllm",
                     "1.3.0rc20", "moe_perf.parquet")
TOKENS = [2 ** k for k in range(15)]     # 1 ... 16,384 tokens a layer (the table's other counts lie between)
KEYS = ["moe_dtype", "hidden_size", "inter_size", "num_experts", "topk", "moe_ep_size", "num_tokens"]


def main() -> None:
    d = pd.read_parquet(TABLE)
    d = d[(d.moe_tp_size == 1) & d.distribution.isin(["balanced", "power_law_1.01"])]
    p = d.pivot_table(index=KEYS, columns="distribution", values="latency").dropna().reset_index()
    p = p[p.num_tokens.isin(TOKENS)]
    for row in p.itertuples(index=False):
        print(json.dumps({"dtype": row.moe_dtype, "hidden": int(row.hidden_size), "inter": int(row.inter_size),
                          "experts": int(row.num_experts), "topk": int(row.topk), "ep": int(row.moe_ep_size),
                          "tokens": int(row.num_tokens), "balanced_ms": float(row.balanced),
                          "power_law_ms": float(row[-1])}))


if __name__ == "__main__":
    main()
