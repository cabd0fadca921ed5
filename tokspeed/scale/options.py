"""The scale options of one prediction, in one object: devices and parallelism, offload, serving, cost."""

from __future__ import annotations

from dataclasses import dataclass

import math

from ..errors import UserError
from ..guard.limits import MIN_RATE_RPS


@dataclass(frozen=True)
class ScaleOptions:
    gpus: int = 1
    parallel: str | None = None       # tp, pp, split, tp=4,pp=2
    gpu_layers: int | None = None
    offload: str = "none"             # none, auto, layers, experts, stream
    cpu: object = None                # host memory system (Hardware) for offload
    users: int | None = None          # concurrent users (serving)
    rate: float | None = None         # requests per second (continuous batching)
    price_per_hour: float | None = None   # USD for the whole setup

    def __post_init__(self):
        for name in ("users", "rate"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                                      and math.isfinite(v)):
                raise UserError(f"{name} must be a positive number, got {v!r}", field=name)
        if self.rate is not None and self.rate < MIN_RATE_RPS:
            raise UserError(f"rate must be at least {MIN_RATE_RPS} requests/s, got {self.rate!r}", field="rate")

    @property
    def wants_layout(self) -> bool:
        """Whether the setup is more than one device holding the whole model."""
        return (self.gpus != 1 or bool(self.parallel) or self.gpu_layers is not None
                or (self.offload or "none").lower() != "none")

    @property
    def wants_serving(self) -> bool:
        return self.users is not None or self.rate is not None
