"""Timing like pyperf: warm-up runs that are thrown away, repeats, median, spread, instability warning."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

# A run is flagged unstable when (max - min) / median exceeds this. 10 % is the threshold
# (pyperf warns at a similar relative spread, its "std dev is x % of the mean").
UNSTABLE_SPREAD = 0.10


@dataclass(frozen=True)
class Timing:
    """Seconds per call over repeats, after warm-up."""

    median_s: float
    min_s: float
    max_s: float
    repeats: int
    warmup: int

    @property
    def spread(self) -> float:
        """(max - min) / median: the relative range of the repeats."""
        return (self.max_s - self.min_s) / self.median_s if self.median_s > 0 else 0.0

    @property
    def unstable(self) -> bool:
        return self.spread > UNSTABLE_SPREAD

    def to_dict(self) -> dict:
        d = asdict(self)
        d["spread"] = self.spread
        d["unstable"] = self.unstable
        return d

    @classmethod
    def from_samples(cls, samples, warmup: int = 0) -> "Timing":
        samples = [float(s) for s in samples]
        if not samples:
            raise ValueError("no samples")
        return cls(statistics.median(samples), min(samples), max(samples), len(samples), warmup)


def time_call(fn, repeats: int = 5, warmup: int = 1, sync=None) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times timed; ``sync`` (e.g.
    torch.cuda.synchronize) runs before each clock read so asynchronous devices are waited for."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        samples.append(time.perf_counter() - t0)
    return Timing.from_samples(samples, warmup)


def instability_warning(label: str, t: Timing) -> str | None:
    """A one-line warning when a measurement's spread is above the threshold, else None."""
    if not t.unstable:
        return None
    return (f"{label}: unstable, repeats spread {t.spread:.0%} of the median (> {UNSTABLE_SPREAD:.0%}); "
            "close other programs or raise --repeats")
