"""Inter-token gaps in bounded memory (serverbench/itl.py) and their summary: past 32,768 gaps a record keeps
a seeded uniform sample of all of them, so its percentiles describe the whole stream, not its start."""

import time

import pytest

from tokspeed.serverbench.itl import MAX_ITL_SAMPLES, Gaps
from tokspeed.serverbench.summary import phase_summary
from tokspeed.stats import median


def linear_stream(n: int, step: float) -> Gaps:
    g = Gaps()
    for i in range(n):
        g.add(i * step)
    return g


def test_a_short_stream_keeps_every_gap_in_order():
    g = Gaps()
    for x in (0.3, 0.1, 0.2):
        g.add(x, 1)
    assert g.fields() == {"itl_s": [0.3, 0.0, 0.1, 0.0, 0.2, 0.0]}


def test_gaps_growing_linearly_give_the_whole_streams_median_not_its_starts():
    """100,000 gaps of i x 10 us: the true median is 49,999.5 x 10 us = 0.499995 s; the first 32,768 gaps
    (what was kept before) have a median of 16,383.5 x 10 us = 0.163835 s."""
    n, step = 100_000, 1e-5
    f = linear_stream(n, step).fields()
    assert len(f["itl_s"]) == MAX_ITL_SAMPLES and f["itl_capped"] and f["itl_n"] == n
    # a uniform sample of 32,768 from [0, 1): its median's standard error is 0.5/sqrt(32,768) = 0.0028
    assert median(f["itl_s"]) == pytest.approx(0.499995, abs=0.015)
    assert f["itl_mean_s"] == pytest.approx((n - 1) / 2 * step) and f["itl_min_s"] == 0.0
    assert f["itl_max_s"] == pytest.approx((n - 1) * step)
    # each tenth of the stream holds about a tenth of the sample (3,277 +- 3 x 54)
    for k in range(10):
        inside = sum(1 for x in f["itl_s"] if k / 10 <= x < (k + 1) / 10)
        assert abs(inside - MAX_ITL_SAMPLES / 10) < 200
    assert linear_stream(n, step).samples == f["itl_s"]      # seeded: the same stream, the same sample


def test_a_chunk_claiming_a_billion_tokens_costs_nothing_and_is_sampled_in_proportion():
    g = Gaps()
    t = time.perf_counter()
    for _ in range(100):
        g.add(1.0, 10**9 - 1)             # a gap of 1 s, then 10^9 - 1 tokens arriving with it
    assert time.perf_counter() - t < 5
    assert g.n == 100 * 10**9 and g.fields()["itl_mean_s"] == pytest.approx(1e-9)
    # 100 gaps of 1 s among 10^11: expected in the sample 32,768 x 1e-9 = 3.3e-5, i.e. none
    assert g.samples.count(1.0) <= 1 and len(g.samples) == MAX_ITL_SAMPLES


def test_the_summary_weights_a_sampled_request_by_its_count():
    """A: 1,000 gaps of 10 ms, all kept. B: 9,000 gaps of 100 ms, 100 kept (each stands for 90).
    Pooled: 10,000 gaps, 9,000 of them 100 ms: p50 = p90 = 100 ms, mean = (10 + 900) / 10,000 s = 91 ms.
    Counting B's samples once would give p50 = 10 ms."""
    a = {"ok": True, "itl_s": [0.01] * 1000}
    b = {"ok": True, "itl_s": [0.1] * 100, "itl_capped": True, "itl_n": 9000, "itl_mean_s": 0.1,
         "itl_min_s": 0.05, "itl_max_s": 0.2}
    st = phase_summary([a, b])["stats"]["itl_s"]
    assert st["weighted"] and st["n"] == 10_000
    assert st["p50"] == pytest.approx(0.1) and st["p90"] == pytest.approx(0.1)
    assert st["mean"] == pytest.approx(0.091) and st["min"] == 0.01 and st["max"] == 0.2
    plain = phase_summary([a, {**b, "itl_capped": None}])["stats"]["itl_s"]      # no sample: as before
    assert "weighted" not in plain and plain["n"] == 1100 and plain["p50"] == pytest.approx(0.01)


def test_weighted_percentile_is_type_7_on_the_expanded_sample():
    from tokspeed.stats import percentile, weighted_percentile

    xs = [0.5, 0.1, 0.9, 0.3, 0.7]
    for q in (0, 25, 50, 90, 100):
        assert weighted_percentile([(x, 1) for x in xs], q) == pytest.approx(percentile(xs, q))
    # [(1, 3), (2, 1)] is [1, 1, 1, 2]: p90 at rank 0.9 x 3 = 2.7, between 1 (rank 2) and 2 (rank 3): 1.7
    assert weighted_percentile([(1, 3), (2, 1)], 90) == pytest.approx(1.7)
    assert weighted_percentile([(1, 3), (2, 1)], 50) == 1
