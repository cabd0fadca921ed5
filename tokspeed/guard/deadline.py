"""Every CPU-bound computation on user input has an end, and says how far it is while it runs.

A ``Deadline`` is made where such a computation starts (the serving search over layouts, a simulation of a
trace, a summary of a run file) and ``check(done, total)`` is called as it goes: past ``PROGRESS_AFTER_S``
it writes one progress line on stderr every ``PROGRESS_EVERY_S`` (``tokspeed: serving search: 12 of 40
layouts, 6 s``), and past its limit it stops with one UserError line saying how far it got and what to ask
instead. The limits are policy: far above what a real input takes (a serving search of 64 GPUs on a
100,000-request trace takes tens of seconds), short enough that no input holds a terminal or a web
worker for minutes.
"""

from __future__ import annotations

import contextvars
import sys
import time

from ..errors import UserError

PROGRESS_AFTER_S = 5.0
PROGRESS_EVERY_S = 5.0
TICKS = 1024                      # ``tick`` looks at the clock once in this many calls (a step costs microseconds)
_CURRENT: contextvars.ContextVar = contextvars.ContextVar("tokspeed_deadline", default=None)


class Deadline:
    def __init__(self, what: str, limit_s: float, hint: str | None = None, unit: str = "steps",
                 progress: bool = True):
        self.what, self.limit_s, self.hint, self.unit, self.progress = what, limit_s, hint, unit, progress
        self.t0 = time.monotonic()
        self._said = self.t0 + PROGRESS_AFTER_S - PROGRESS_EVERY_S
        self._ticks = 0
        self._token = None
        self.done: int | None = None
        self.total: int | None = None

    def __enter__(self) -> "Deadline":
        """The deadline that ``tick`` checks inside the computation (a simulation deep in a search)."""
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._token)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _far(self, done, total) -> str:
        if done is None:
            return ""
        return f"{done:,} of {total:,} {self.unit}" if total else f"{done:,} {self.unit}"

    def check(self, done: int | None = None, total: int | None = None) -> None:
        if done is not None:
            self.done, self.total = done, total
        done, total = self.done, self.total
        now = time.monotonic()
        if now - self.t0 > self.limit_s:
            far = self._far(done, total)
            raise UserError(f"{self.what} did not finish within {self.limit_s:g} s" + (f" ({far} done)" if far else ""),
                            self.hint)
        if self.progress and now - self._said >= PROGRESS_EVERY_S:
            self._said = now
            far = self._far(done, total)
            sys.stderr.write(f"tokspeed: {self.what}: {far + ', ' if far else ''}{now - self.t0:.0f} s\n")
            sys.stderr.flush()


def tick() -> None:
    """Inside a loop of a computation on user input: the current ``Deadline`` (if any) checked once in TICKS
    calls."""
    clock = _CURRENT.get()
    if clock is not None:
        clock._ticks += 1
        if clock._ticks % TICKS == 0:
            clock.check()
