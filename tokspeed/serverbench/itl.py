"""Inter-token gaps of one stream, kept in bounded memory whatever the stream's length.

A stream of n tokens has n-1 gaps. Up to ``MAX_ITL_SAMPLES`` of them are kept (``itl_s``); the count, sum,
smallest and largest gap are exact for all of them. A well-behaved answer has at most ``MAX_ITL_SAMPLES``
gaps (the largest ``--max-tokens`` bench-server asks for), so for it ``itl_s`` is every gap, in order.
A longer stream keeps a uniform random sample of all its gaps (reservoir sampling, Li's "Algorithm L",
ACM TOMS 20(4), 1994, seeded so a stream gives the same sample on every run): the percentiles of
``itl_s`` then describe the whole stream, not its first part, and the record says ``itl_capped: true``
with the exact ``itl_n``, ``itl_mean_s``, ``itl_min_s`` and ``itl_max_s`` (``itl_s`` is then not in
arrival order). Each sample stands for ``itl_n / len(itl_s)`` gaps; the summary weights it so.

A chunk that carries k tokens adds its gap and k-1 gaps of 0 (those tokens reached the user together)
as a count, never as a list of k-1 zeros: Algorithm L jumps over the gaps it does not keep, so a server
claiming 10⁹ tokens in one chunk costs a few operations, not 10⁹.
"""

from __future__ import annotations

import math
import random

MAX_ITL_SAMPLES = 32_768  # = bench-server's MAX_OUTPUT_TOKENS: every gap of any answer it asks for
SEED = 0                  # the reservoir's: the same stream gives the same sample


class Gaps:
    def __init__(self, cap: int = MAX_ITL_SAMPLES, seed: int = SEED):
        self.cap = cap
        self.samples: list[float] = []
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0
        self._rng = random.Random(seed)
        self._w = 1.0
        self._next = 0        # the index (0-based, over all gaps) of the next gap the reservoir takes

    def add(self, gap: float, zeros: int = 0) -> None:
        """One gap, then ``zeros`` gaps of 0 (the other tokens of a multi-token chunk)."""
        zeros = max(zeros, 0)
        self._take(gap, 1)
        if zeros:
            self._take(0.0, zeros)
        self.total += gap
        self.min = min(self.min, gap, 0.0 if zeros else gap)
        self.max = max(self.max, gap)

    def _take(self, value: float, count: int) -> None:
        """``count`` gaps of ``value`` into the reservoir: filled first, then Algorithm L's skips."""
        fill = min(count, self.cap - len(self.samples))
        if fill > 0:
            self.samples.extend([value] * fill)
            self.n += fill
            count -= fill
            if len(self.samples) == self.cap:
                self._w = math.exp(math.log(self._u()) / self.cap)
                self._skip()
        if not count:
            return
        end = self.n + count
        while self._next < end:
            self.samples[self._rng.randrange(self.cap)] = value
            self._w *= math.exp(math.log(self._u()) / self.cap)
            self._skip()
        self.n = end

    def _skip(self) -> None:
        """After the gap at ``_next`` (or the fill), the index of the next one kept: a geometric jump."""
        start = max(self._next + 1, self.n)
        if self._w >= 1.0:
            self._next = start
            return
        self._next = start + int(math.log(self._u()) / math.log1p(-self._w))

    def _u(self) -> float:
        return self._rng.random() or 5e-324   # (0, 1): log() needs a positive number

    def fields(self) -> dict:
        out: dict = {"itl_s": self.samples}
        if self.n > len(self.samples):
            out.update({"itl_capped": True, "itl_n": self.n, "itl_mean_s": self.total / self.n,
                        "itl_min_s": self.min, "itl_max_s": self.max})
        return out
