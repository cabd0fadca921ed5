"""Inter-token gaps of one stream, kept in bounded memory whatever the stream's length.

A stream of n tokens has n-1 gaps. The first ``MAX_ITL_SAMPLES`` are kept in order (``itl_s``); the count,
sum and largest gap are exact for all of them. A chunk that carries k tokens adds its gap and k-1 gaps of 0
(those tokens reached the user together) as counts, never as a list of k-1 zeros, so a server claiming 10⁹
tokens in one chunk costs nothing. A well-behaved answer has at most ``MAX_ITL_SAMPLES`` gaps (the largest
``--max-tokens`` bench-server asks for), so for it ``itl_s`` is complete; a longer one is recorded with
``itl_capped: true`` and the exact ``itl_n``, ``itl_mean_s`` and ``itl_max_s``.
"""

from __future__ import annotations

MAX_ITL_SAMPLES = 32_768  # = bench-server's MAX_OUTPUT_TOKENS: every gap of any answer it asks for


class Gaps:
    def __init__(self, cap: int = MAX_ITL_SAMPLES):
        self.cap = cap
        self.samples: list[float] = []
        self.n = 0
        self.total = 0.0
        self.max = 0.0

    def add(self, gap: float, zeros: int = 0) -> None:
        """One gap, then ``zeros`` gaps of 0 (the other tokens of a multi-token chunk)."""
        if len(self.samples) < self.cap:
            self.samples.append(gap)
        room = self.cap - len(self.samples)
        if zeros > 0 and room > 0:
            self.samples.extend([0.0] * min(zeros, room))
        self.n += 1 + max(zeros, 0)
        self.total += gap
        self.max = max(self.max, gap)

    def fields(self) -> dict:
        out: dict = {"itl_s": self.samples}
        if self.n > len(self.samples):
            out.update({"itl_capped": True, "itl_n": self.n, "itl_mean_s": self.total / self.n,
                        "itl_max_s": self.max})
        return out
