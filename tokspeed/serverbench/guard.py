"""The one writer's gate for finished records (every bench-server mode): write, keep, count, and stop
the run when the server has gone away, the error rate is too high or a request cap is reached; the
sweep's "has throughput stopped rising" check; and the run of a load generator under Ctrl-C and
``--max-duration`` (one process and Ray, whose driver runs the generator itself)."""

from __future__ import annotations

import asyncio

from .apis import redact_url
from .client import CANCELLED
from .record import Recorder
from .summary import saturation, summarize

# Stop when the server has plainly gone away or broken: this many failures in a row that are connect
# errors or HTTP 5xx, whatever came before (policy: enough to ride out a server that is still starting
# or a short hiccup, few enough not to hammer a dead one). --max-consecutive-failures changes it.
MAX_CONSECUTIVE_FAILURES = 20
GIVE_UP_KINDS = ("connect", "http_5xx")
MIN_FOR_ERROR_RATE = 10  # --max-error-rate is judged once this many requests have ended (policy: not on 1 of 1)
SWEEP_TOLERANCE = 0.05  # a sweep saturates when output tok/s rises by no more than this share (--sweep-tolerance)


class RecordGuard:
    """Takes every finished record: writes it (the one writer of requests.jsonl), keeps it, advances the
    progress bar, and applies the stop conditions through ``halt(cancel_in_flight)``."""

    def __init__(self, cfg, recorder: Recorder, records: list[dict], progress, state: dict, halt):
        self.cfg, self.recorder, self.records, self.progress, self.state = cfg, recorder, records, progress, state
        self.halt = halt
        self.streak = {"n": 0, "kinds": {}}
        self.done = self.failed = 0

    def abort(self, reason: str) -> None:
        if not self.state["aborted"]:
            self.state["aborted"] = reason
            self.halt(True)

    def __call__(self, rec: dict) -> None:
        cfg, streak = self.cfg, self.streak
        rec = self.recorder.write(rec)
        self.records.append(rec)
        self.progress.advance(rec)
        kind = rec.get("error")
        if kind == CANCELLED:
            return
        self.done += 1
        self.failed += kind is not None
        if kind in GIVE_UP_KINDS:
            streak["n"] += 1
            streak["kinds"][kind] = streak["kinds"].get(kind, 0) + 1
        else:
            streak["n"], streak["kinds"] = 0, {}
        if streak["n"] >= cfg.max_consecutive_failures:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(streak["kinds"].items()))
            self.abort(f"{streak['n']} failures in a row ({kinds}): is the server at {redact_url(cfg.url)} "
                       "running? (--max-consecutive-failures)")
        rate = self.failed / self.done
        if cfg.max_error_rate is not None and self.done >= MIN_FOR_ERROR_RATE and rate > cfg.max_error_rate:
            self.abort(f"error rate {rate:.0%} over {self.done} requests is above --max-error-rate "
                       f"{cfg.max_error_rate:.0%}")
        if cfg.max_run_requests is not None and self.done >= cfg.max_run_requests:
            self.halt(False)  # a cap ends the run normally: in-flight requests finish


def sweep_saturated(cfg, records: list[dict]) -> bool:
    """After a phase of a sweep: has output throughput stopped rising, or an SLO broken?"""
    phases = summarize({"slo": cfg.slo, "window": cfg.window}, records)["phases"]
    return saturation(phases, cfg.sweep.get("tolerance", SWEEP_TOLERANCE))[1]


async def run_guarded(gen, cfg, ctrl_c, progress) -> None:
    """Run ``gen`` (a ``LoadGenerator``) to its end: Ctrl-C halts it (a second press cancels this task),
    ``cfg.max_run_s`` ends it normally (requests in flight finish)."""
    loop = asyncio.get_running_loop()
    if ctrl_c is not None:
        ctrl_c.attach(loop, gen.halt, asyncio.current_task().cancel)
    run_cap = loop.call_later(cfg.max_run_s, gen.halt, False) if cfg.max_run_s else None
    try:
        with progress:
            await gen.run()
    finally:
        if run_cap is not None:
            run_cap.cancel()
        if ctrl_c is not None:
            ctrl_c.detach()
