"""Timing statistics: median, spread = (max - min) / median, unstable above 10 %."""

import pytest

from tokspeed.measure.stats import Timing, instability_warning, time_call


def test_median_and_spread_by_hand():
    t = Timing.from_samples([1.0, 2.0, 3.0, 4.0, 10.0], warmup=1)
    assert t.median_s == 3.0 and t.min_s == 1.0 and t.max_s == 10.0
    assert t.spread == pytest.approx(9.0 / 3.0)
    assert t.unstable
    assert "unstable" in instability_warning("x", t)


def test_tight_samples_are_stable():
    t = Timing.from_samples([1.00, 1.02, 1.05, 0.99, 1.01])
    assert t.median_s == 1.01
    assert t.spread == pytest.approx(0.06 / 1.01)
    assert not t.unstable and instability_warning("x", t) is None


def test_time_call_runs_warmup_then_repeats():
    calls = []
    t = time_call(lambda: calls.append(1), repeats=5, warmup=2)
    assert len(calls) == 7 and t.repeats == 5 and t.warmup == 2


def test_is_real_takes_finite_numbers_only():
    from tokspeed.stats import is_real

    assert is_real(0) and is_real(-1.5) and is_real(10**30)
    assert not any(is_real(v) for v in (True, False, float("nan"), float("inf"), -float("inf"), "1", None, [1]))
