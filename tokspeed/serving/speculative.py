"""Speculative decoding: a drafter proposes ``k`` tokens, the model verifies them in one step.

Each decode row then carries ``k + 1`` tokens through the model (the dense part of the step runs over
``b (k + 1)`` rows, LM head over all), and a sequence gains on average ``(1 - a^(k+1)) / (1 - a)`` tokens
per step for a per-token acceptance ``a`` (Leviathan et al. 2023, eq. 1: i.i.d. acceptance).
The drafter costs, per step:
- ``mtp``: ``k`` passes of one MTP module, each one transformer block + the shared head: ``k / n_layers``
  of a decode step's depth-free time (DeepSeek-V3 report, section 2.2);
- ``draft``: ``k`` decode steps of the draft model on the same devices (its own ledger and timer).
Acceptance is an input. Published defaults (``DEFAULT_ACCEPTANCE``): DeepSeek-V3's MTP, "85 % to 90 %"
acceptance of the second token (DeepSeek-V3 technical report, section 5.4.3), taken at 0.85.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UserError

DEFAULT_ACCEPTANCE = {"deepseek-v3": 0.85, "deepseek-r1": 0.85}
KINDS = ("mtp", "draft")


@dataclass(frozen=True)
class Speculation:
    kind: str
    k: int = 1
    acceptance: float | None = None
    draft_model: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UserError(f"speculative kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= 16:
            raise UserError(f"speculative tokens k must be an integer in [1, 16], got {self.k!r}")
        a = self.acceptance
        if a is not None and not (isinstance(a, (int, float)) and math.isfinite(a) and 0 <= a < 1):
            raise UserError(f"acceptance must be in [0, 1), got {a!r}")
        if self.kind == "draft" and not self.draft_model:
            raise UserError("speculative kind 'draft' needs a draft model")

    def acceptance_for(self, model_id: str) -> float:
        if self.acceptance is not None:
            return float(self.acceptance)
        for key, a in DEFAULT_ACCEPTANCE.items():
            if model_id.startswith(key):
                return a
        raise UserError(f"no published acceptance rate for {model_id}", "give one (acceptance in [0, 1))")


def tokens_per_step(a: float, k: int) -> float:
    """Expected tokens a sequence gains per verification step: 1 + a + ... + a^k."""
    return float(k + 1) if a >= 1 else (1 - a ** (k + 1)) / (1 - a)


def attach(cost, spec_dec: Speculation, model_spec, draft_cost=None) -> float:
    """Make ``cost`` (a StepCost) verify ``k + 1`` rows and pay the drafter; returns tokens per step."""
    k = spec_dec.k
    if spec_dec.kind == "mtp":
        def drafter(b):
            return k * cost.decode_dense(b) / max(model_spec.n_layers, 1)
    else:
        def drafter(b):
            return k * draft_cost.step(b, 0, 0.0, 0.0)
    cost.extra_decode = (k + 1, drafter)
    return tokens_per_step(spec_dec.acceptance_for(model_spec.id), k)
