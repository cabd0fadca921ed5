"""Ctrl-C during a bench-server run, without a traceback and without losing a record.

For the length of a run the process's SIGINT handler is replaced (main thread only): the first
press calls ``first`` inside the event loop (stop starting requests, cancel those in flight, which are
recorded as ``cancelled``); a second press calls ``second`` (cancel the run's main task: end now, the
JSONL already holds every finished request). No ``KeyboardInterrupt`` is raised inside the loop, so
asyncio has no task to report with a traceback. Presses after the loop has ended (while the summary
is written, a fraction of a second) are counted and otherwise ignored, so the summary is always written;
after a run that was interrupted the handler is left in place until the process exits.
"""

from __future__ import annotations

import signal
import threading


class CtrlC:
    def __init__(self):
        self.presses = 0
        self._loop = None
        self._first = self._second = None
        self._old = None

    def __enter__(self) -> "CtrlC":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        self.detach()
        if self._old is not None and not self.presses:
            signal.signal(signal.SIGINT, self._old)
            self._old = None
        # after a Ctrl-C the process is on its way out (exit 130): the handler stays, so a further
        # press while the table is printed does not end it with a KeyboardInterrupt at exit

    def attach(self, loop, first, second) -> None:
        """Route presses to ``first`` / ``second``, called in ``loop``'s thread."""
        self._loop, self._first, self._second = loop, first, second

    def detach(self) -> None:
        self._loop = None

    @property
    def interrupted(self) -> bool:
        return self.presses > 0

    def _handler(self, signum, frame) -> None:
        self.presses += 1
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        callback = self._first if self.presses == 1 else self._second
        try:
            loop.call_soon_threadsafe(callback)
        except RuntimeError:  # the loop closed between the check and the call
            pass
