"""What each request asks for: prompt and output lengths drawn from a distribution, and the prompt text.

A length is ``N`` (fixed) or ``LO-HI`` (uniform integers, both ends included), drawn from a seeded
``random.Random`` so a run is reproducible. Prompts are made of common short English words, one
word per target token: most such words are one token in BPE vocabularies (GPT-2, Llama 3, Qwen),
so the real prompt length is close to the target but not equal; the record keeps the server's
own count (``prompt_tokens``) and the target (``target_prompt_tokens``). Each prompt starts with
its request number so that no two share a prefix (prefix caching would otherwise skip prefill).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from ..errors import UserError

WORDS = ("the of and to in is was for on are with as at be this have from or one had by word but not "
         "what all were we when your can said there use an each which she do how their if will up other "
         "about out many then them these so some her would make like him into time has look two more "
         "write go see number no way could people my than first water been call who oil its now find "
         "long down day did get come made may part").split()


@dataclass(frozen=True)
class Dist:
    lo: int
    hi: int

    def draw(self, rng: random.Random) -> int:
        return self.lo if self.lo == self.hi else rng.randint(self.lo, self.hi)

    @property
    def mean(self) -> float:
        return (self.lo + self.hi) / 2

    def __str__(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def parse_dist(text: str, what: str, cap: int) -> tuple[Dist, bool]:
    """``'128'`` or ``'64-256'`` -> Dist, and whether it was capped to ``cap``."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(text))
    if not m:
        raise UserError(f"cannot read {what} {text!r}", "write a number like 128 or a range like 64-256")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if lo < 1 or hi < lo:
        raise UserError(f"{what} must be >= 1 and LO <= HI, got {text!r}")
    capped = hi > cap
    return Dist(min(lo, cap), min(hi, cap)), capped


def make_prompt(index: int, n_tokens: int, rng: random.Random) -> str:
    head = f"Request {index}:"
    words = [rng.choice(WORDS) for _ in range(max(n_tokens - 3, 1))]
    return head + " " + " ".join(words)
