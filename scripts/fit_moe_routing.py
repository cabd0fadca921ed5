"""The routed experts' time under real (skewed) routing over their time under balanced routing, by EP size and mean
tokens per expert, from AIConfigurator's measured TensorRT-LLM MoE layers; writes what the serving step reads.

    PYTHONPATH=. python3 scripts/fit_moe_routing.py      # writes tokspeed/serving/moe_routing.toml

Input: ``benchmarks/aiconfigurator_moe_routing.jsonl`` (``benchmarks/aiconfigurator_moe_routing.py``, run under
AIConfigurator's interpreter: 14 MoE shapes x 4 weight formats x EP 1-256 x 1-16,384 tokens on H200, each layer timed
with tokens routed ``balanced`` and by AIConfigurator's default ``power_law_1.01``). Each row gives a ratio
``power_law_ms / balanced_ms``; rows are grouped by EP size and by log2 of the mean tokens per expert
(``tokens x top-k / experts``, rounded), and each cell holds the median ratio of its rows (every shape and format
together: the mechanism is where the tokens go, not what the kernel computes) and the row count. Cells past
``MAX_LOG2_TPE`` (prompt passes of thousands of tokens per expert, few shapes) are left out: the lookup holds the
last cell's value beyond them.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokspeed.toml_writer import dumps  # noqa: E402

SRC = ROOT / "benchmarks" / "aiconfigurator_moe_routing.jsonl"
OUT = ROOT / "tokspeed" / "serving" / "moe_routing.toml"
MIN_LOG2_TPE, MAX_LOG2_TPE = -3, 10
HEADER = """# Written by scripts/fit_moe_routing.py (do not edit): routed-expert time under skewed routing / under balanced
# routing, by EP size (one table per size) and log2 of the mean tokens per expert (tokens x top-k / experts).
# Source: AIConfigurator 0.12's measured TensorRT-LLM 1.3.0rc20 MoE layers on H200 SXM (moe_perf.parquet),
# power_law_1.01 (its default workload distribution) over balanced, median over 14 shapes and 4 weight formats
# (benchmarks/aiconfigurator_moe_routing.jsonl). Read by tokspeed/serving/moe_routing.py.
"""


def cells(rows) -> dict:
    """{ep: {log2 tpe: [ratios]}}."""
    out = defaultdict(lambda: defaultdict(list))
    for r in rows:
        tpe = r["tokens"] * r["topk"] / r["experts"]
        b = round(math.log2(tpe))
        if MIN_LOG2_TPE <= b <= MAX_LOG2_TPE and r["balanced_ms"] > 0:
            out[r["ep"]][b].append(r["power_law_ms"] / r["balanced_ms"])
    return out


def main() -> int:
    rows = [json.loads(line) for line in SRC.read_text().splitlines() if line.strip()]
    data = {"source": "AIConfigurator 0.12 aiconfigurator_core/systems/data/h200_sxm/moe/trtllm/1.3.0rc20/"
                      "moe_perf.parquet: power_law_1.01 / balanced latency, moe_tp_size 1",
            "ep": {}}
    for ep, by in sorted(cells(rows).items()):
        data["ep"][str(ep)] = {"log2_tpe": [b for b in sorted(by)],
                               "ratio": [round(statistics.median(by[b]), 3) for b in sorted(by)],
                               "rows": [len(by[b]) for b in sorted(by)]}
    OUT.write_text(dumps(data, header=HEADER))
    for ep, t in data["ep"].items():
        print(f"EP {ep:>3}: " + " ".join(f"{b}:{x:.2f}" for b, x in zip(t["log2_tpe"], t["ratio"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
