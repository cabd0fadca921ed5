"""Routed experts under real routing: a MoE layer's time with tokens routed as a trained router sends them (a few
experts hot) over its time with tokens spread evenly, which is what the ledger's expert operators assume
(``attended.expected_experts``: each token picks top-k of E uniformly).

Under expert parallelism the layer ends when the rank holding the hottest experts does, so skew costs more the
more ranks there are and the more tokens each expert gets; at a few tokens per expert fewer distinct experts are
touched (fewer weights read), and the ratio dips below 1. ``moe_routing.toml`` holds the measured ratio by EP size and
mean tokens per expert (``scripts/fit_moe_routing.py``; source: AIConfigurator's TensorRT-LLM MoE tables on H200,
its default ``power_law_1.01`` over ``balanced``); ``routing_skew`` interpolates it in log2 of both and holds the edge
values beyond the table. Applied to the routed experts of an expert-parallel worker (``expert.expert_time_ops``).
"""

from __future__ import annotations

import math
import tomllib
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path

FILE = Path(__file__).with_name("moe_routing.toml")


@lru_cache(maxsize=1)
def _table() -> tuple:
    """((log2 ep, (log2 tpe, ...), (ratio, ...)), ...) sorted by EP size."""
    with open(FILE, "rb") as f:
        data = tomllib.load(f)
    rows = [(math.log2(int(ep)), tuple(t["log2_tpe"]), tuple(t["ratio"])) for ep, t in data["ep"].items()]
    return tuple(sorted(rows))


def _along(xs, ys, x: float) -> float:
    """Linear interpolation of ``ys`` over sorted ``xs`` at ``x``, the end values beyond them."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect_right(xs, x)
    f = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ys[i - 1] + f * (ys[i] - ys[i - 1])


def routing_skew(ep: int, tokens: float, topk: int, experts: int) -> float:
    """Routed-expert time under real routing / under balanced routing for ``tokens`` tokens of top-``topk`` routing
    over ``experts`` experts spread on ``ep`` GPUs; 1 without routed experts or tokens."""
    if ep < 1 or tokens <= 0 or topk <= 0 or experts <= 0:
        return 1.0
    tpe = math.log2(tokens * topk / experts)
    table = _table()
    eps = [row[0] for row in table]
    by_ep = [_along(row[1], row[2], tpe) for row in table]
    return _along(eps, by_ep, math.log2(ep))
