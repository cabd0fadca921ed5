"""Summary statistics shared by the calibration report, the server benchmark and measurements."""

from __future__ import annotations

import bisect
import math


def is_real(v) -> bool:
    """``v`` is a finite int or float (not a bool, not NaN or infinite): a number a record may carry."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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


def band_error_pct(err_pct: float) -> float:
    """The error an error band covers, from a signed % error (predicted / measured - 1, in %): the larger of
    predicted / measured and measured / predicted, less 1, in % (``exp(|log(predicted / measured)|) - 1``). A band
    of ``b`` % holds the measurements from prediction / (1 + b) to prediction x (1 + b): symmetric in ratio, so a
    prediction twice too fast and one half too slow are the same 100 % off. NaN stays NaN."""
    if math.isnan(err_pct):
        return err_pct
    ratio = 1 + err_pct / 100
    return (max(ratio, 1 / ratio) - 1) * 100 if ratio > 0 else math.inf


def median(values) -> float:
    """The 50th percentile (the mean of the two middle values for an even count)."""
    return percentile(values, 50)


def weighted_percentile(pairs, q: float) -> float:
    """``percentile`` of a sample in which each ``(value, weight)`` stands for ``weight`` values equal to it:
    rank q/100 x (W - 1) over the total weight W, the value at a rank being the first whose cumulative
    weight passes it, linear between neighbouring ranks. With every weight 1 this is ``percentile``."""
    xs = sorted((v, w) for v, w in pairs if w > 0)
    if not xs:
        return math.nan
    cum, total = [], 0.0
    for _, w in xs:
        total += w
        cum.append(total)
    pos = q / 100 * max(total - 1, 0.0)
    lo = math.floor(pos)

    def at(rank: float) -> float:
        return xs[min(bisect.bisect_right(cum, rank), len(xs) - 1)][0]

    return at(lo) + (at(lo + 1) - at(lo)) * (pos - lo)
