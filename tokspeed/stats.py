"""Summary statistics shared by the calibration report, the server benchmark and measurements."""

from __future__ import annotations

import math


def percentile(values, q: float) -> float:
    """Linear interpolation between closest ranks, rank = q/100 x (n - 1) (numpy's default method);
    ``nan`` for no values (callers that need a number check for emptiness first)."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = q / 100 * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values) -> float:
    """The 50th percentile (the mean of the two middle values for an even count)."""
    return percentile(values, 50)
