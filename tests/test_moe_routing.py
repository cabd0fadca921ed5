"""Routed experts under real routing (serving/moe_routing.py): the table is the median measured ratio of
AIConfigurator's power-law over balanced MoE layers per EP size and tokens-per-expert cell; checked here against the
raw rows (benchmarks/aiconfigurator_moe_routing.jsonl) recomputed by hand, and its use in the EP step."""

import json
import math
import statistics
from pathlib import Path

import pytest

from tokspeed.serving import expert
from tokspeed.serving.expert import EXPERT_ROLES, _cut
from tokspeed.serving.moe_routing import routing_skew
from tokspeed.serving.worker import Parallelism
from tokspeed.serving_api import make_setup
from tokspeed.timing import pass_time

RAW = Path(__file__).resolve().parents[1] / "benchmarks" / "aiconfigurator_moe_routing.jsonl"


def _cell(ep, log2_tpe):
    rows = [json.loads(line) for line in RAW.read_text().splitlines()]
    return statistics.median(r["power_law_ms"] / r["balanced_ms"] for r in rows
                             if r["ep"] == ep and round(math.log2(r["tokens"] * r["topk"] / r["experts"])) == log2_tpe)


def test_on_a_cell_it_is_the_median_of_the_measured_rows():
    # DeepSeek-R1 decode under attention-DP8 + EP8: 1,024 tokens x top-8 / 256 experts = 32 a expert (2^5)
    assert routing_skew(8, 1024, 8, 256) == pytest.approx(_cell(8, 5), abs=1e-3)
    # gpt-oss-120b on one GPU, 2,048 prompt tokens x top-4 / 128 = 64 a expert (2^6)
    assert routing_skew(1, 2048, 4, 128) == pytest.approx(_cell(1, 6), abs=1e-3)


def test_between_cells_it_interpolates_in_log2():
    lo, hi = _cell(16, 5), _cell(16, 6)
    # 45.25 tokens a expert = 2^5.5: half-way
    assert routing_skew(16, 45.254834 * 256 / 8, 8, 256) == pytest.approx((lo + hi) / 2, abs=2e-3)
    # EP 12 between EP 8 and EP 16 at 2^5: log2 12 = 3.585, 0.585 of the way
    e8, e16 = _cell(8, 5), _cell(16, 5)
    assert routing_skew(12, 1024, 8, 256) == pytest.approx(e8 + (math.log2(12) - 3) * (e16 - e8), abs=2e-3)


def test_skew_grows_with_ranks_and_tokens_and_holds_past_the_table():
    assert routing_skew(64, 8192, 8, 256) > routing_skew(8, 8192, 8, 256) > routing_skew(8, 1024, 8, 256) > 1
    assert routing_skew(8, 10 ** 9, 8, 256) == routing_skew(8, 2 ** 10 * 256 / 8, 8, 256)
    assert routing_skew(4, 1024, 0, 0) == 1.0


def test_the_expert_parallel_step_takes_it(monkeypatch):
    # DeepSeek-R1 on 8 x H200, attention DP8 + EP8, a decode step of 1,024 rows: the routed experts' time on one rank
    # (their operators cut 1/8, timed alone) is multiplied by the skew; nothing else in the step moves
    s = make_setup("deepseek-r1", "h200-sxm", "tensorrt-llm", quant="FP8", kv_dtype="fp8", isl=1024, osl=2048)
    w = s.worker(Parallelism(tp=1, ep=8, dp=8))[0]
    r, cost = w.resolved, w.cost
    ops = list(cost._depth_free(1024, 1))
    cut = [_cut(op, 1 / 8, True) for op in ops if op.role in EXPERT_ROLES]
    even = pass_time(cut, r.hw, r.profile, r.quant, 1024, False).seconds - r.profile.fixed_s
    skewed = cost.time_ops(ops, 1024, 1)
    monkeypatch.setattr(expert, "routing_skew", lambda *a: 1.0)
    assert skewed - cost.time_ops(ops, 1024, 1) == pytest.approx((routing_skew(8, 1024, 8, 256) - 1) * even, rel=1e-6)
