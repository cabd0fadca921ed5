"""One probe measurement: a rate (GB/s or TFLOP/s) from the work done and the median time."""

from __future__ import annotations

from dataclasses import dataclass

from .stats import Timing


@dataclass(frozen=True)
class ProbeResult:
    name: str           # e.g. "cpu_read", "cpu_matvec_bf16", "gpu_h2d_pinned"
    unit: str           # "GB/s" or "TFLOP/s"
    work: float         # bytes moved (GB/s) or FLOPs done (TFLOP/s) per call
    timing: Timing
    what: str = ""      # what was counted, in words

    @property
    def value(self) -> float:
        """Rate at the median time (decimal units: 1 GB/s = 1e9 B/s, 1 TFLOP/s = 1e12 FLOP/s)."""
        scale = 1e9 if self.unit == "GB/s" else 1e12
        return self.work / self.timing.median_s / scale

    @property
    def best(self) -> float:
        scale = 1e9 if self.unit == "GB/s" else 1e12
        return self.work / self.timing.min_s / scale

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "best": self.best, "unit": self.unit,
                "work": self.work, "what": self.what, "timing": self.timing.to_dict()}
