"""Drive many requests at a server: a warm-up, then one phase per concurrency level or one Poisson-rate phase.

- Concurrency phase ``c``: ``c`` workers each send a request, wait for it to finish, send the next,
  until the phase has started ``requests`` requests or ``duration_s`` has passed (requests already
  started then run to their end, so none is cut short).
- Rate phase: arrivals form a Poisson process of ``rate_rps`` requests per second (exponential
  gaps from a seeded RNG); at most ``max(concurrency)`` run at once, and an arrival that finds them
  all busy waits (recorded as ``queued_s``, its wait before it was sent; TTFT starts at the send).
- Warm-up: ``warmup`` requests, one at a time, before the first phase; recorded with ``warmup: true``
  and left out of every statistic.
- ``stop`` (set on Ctrl-C): no new request starts; requests in flight are cancelled and recorded as
  ``cancelled`` with what they measured so far.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from .client import CANCELLED
from .workload import Dist, make_prompt


REQUESTS_PER_WORKER = 4  # default phase length when neither --requests nor --duration: 4 waves of c requests,
MIN_REQUESTS = 10  # ... and at least 10, so p90 has some support
RATE_DEFAULT_DURATION_S = 60.0  # default length of a rate phase without --requests / --duration


@dataclass
class LoadPlan:
    concurrency: list[int]
    requests: int | None  # per phase; None -> duration_s bounds the phase, or the defaults above
    duration_s: float | None
    rate_rps: float | None
    warmup: int
    prompt_tokens: Dist
    max_tokens: Dist
    seed: int = 0

    def bounds(self, concurrency: int) -> tuple[int | None, float | None]:
        """(requests, duration_s) for one phase, with the defaults filled in."""
        if self.requests is not None or self.duration_s is not None:
            return self.requests, self.duration_s
        if self.rate_rps:
            return None, RATE_DEFAULT_DURATION_S
        return max(MIN_REQUESTS, REQUESTS_PER_WORKER * concurrency), None


@dataclass
class Job:
    """One request to make: its number, phase labels and the sizes drawn for it."""

    index: int
    labels: dict
    prompt: str
    max_tokens: int


Send = Callable[[Job], Awaitable[dict]]


class LoadGenerator:
    def __init__(self, plan: LoadPlan, send: Send, on_record: Callable[[dict], None],
                 on_phase: Callable[[str, int | None, float | None], None] | None = None):
        self.plan, self.send, self.on_record = plan, send, on_record
        self.on_phase = on_phase or (lambda label, total, duration: None)
        self.rng = random.Random(plan.seed)
        self.stop = asyncio.Event()
        self._next_index = 0
        self._in_flight: set[asyncio.Task] = set()
        self._t_run = time.perf_counter()

    def phases(self) -> list[dict]:
        if self.plan.rate_rps:
            return [{"phase": f"rate={self.plan.rate_rps:g}", "rate_rps": self.plan.rate_rps,
                     "concurrency": max(self.plan.concurrency)}]
        return [{"phase": f"c={c}", "concurrency": c, "rate_rps": None} for c in self.plan.concurrency]

    async def run(self) -> None:
        watcher = asyncio.create_task(self._cancel_on_stop())
        try:
            if self.plan.warmup:
                self.on_phase("warm-up", self.plan.warmup, None)
                await self._closed_loop({"phase": "warm-up", "concurrency": 1, "rate_rps": None, "warmup": True},
                                        1, self.plan.warmup, None)
            for labels in self.phases():
                if self.stop.is_set():
                    break
                labels = {**labels, "warmup": False}
                requests, duration_s = self.plan.bounds(labels["concurrency"])
                self.on_phase(labels["phase"], requests, duration_s)
                if labels["rate_rps"]:
                    await self._open_loop(labels, requests, duration_s)
                else:
                    await self._closed_loop(labels, labels["concurrency"], requests, duration_s)
        finally:
            watcher.cancel()

    def next_job(self, labels: dict) -> Job:
        """The next request to make. Jobs are drawn in index order from the seeded RNG, so a run's
        prompts can be regenerated from its plan (the JSONL does not store prompt text)."""
        i = self._next_index
        self._next_index += 1
        n_prompt = self.plan.prompt_tokens.draw(self.rng)
        n_out = self.plan.max_tokens.draw(self.rng)
        return Job(i, {**labels, "target_prompt_tokens": n_prompt, "max_tokens": n_out},
                   make_prompt(i, n_prompt, self.rng), n_out)

    async def _one(self, job: Job, queued_s: float = 0.0) -> None:
        job.labels["queued_s"] = queued_s
        job.labels["start_s"] = time.perf_counter() - self._t_run
        task = asyncio.create_task(self.send(job))
        self._in_flight.add(task)
        try:
            rec = await task
        except asyncio.CancelledError:
            if not task.cancelled():  # this coroutine itself is being cancelled
                task.cancel()
                raise
            # cancelled before it ran: still one line in the record
            rec = {"type": "request", "index": job.index, **job.labels, "ok": False,
                   "error": CANCELLED, "error_detail": "stopped by the user before it was sent"}
        finally:
            self._in_flight.discard(task)
        rec["end_s"] = time.perf_counter() - self._t_run
        self.on_record(rec)

    async def _closed_loop(self, labels: dict, workers: int, requests: int | None, duration_s: float | None) -> None:
        deadline = None if duration_s is None else time.perf_counter() + duration_s
        started = 0

        def claim() -> bool:
            nonlocal started
            if self.stop.is_set() or (requests is not None and started >= requests):
                return False
            if deadline is not None and time.perf_counter() >= deadline:
                return False
            started += 1
            return True

        async def worker():
            while claim():
                await self._one(self.next_job(labels))

        await asyncio.gather(*(worker() for _ in range(workers)))

    async def _open_loop(self, labels: dict, requests: int | None, duration_s: float | None) -> None:
        plan = self.plan
        limit = asyncio.Semaphore(max(plan.concurrency))
        t_start = time.perf_counter()
        deadline = None if duration_s is None else t_start + duration_s
        arrival = t_start
        started = 0
        tasks = []

        async def gated(job: Job, t_arrival: float):
            async with limit:
                if self.stop.is_set():
                    return
                await self._one(job, queued_s=time.perf_counter() - t_arrival)

        while not self.stop.is_set() and (requests is None or started < requests):
            arrival += self.rng.expovariate(plan.rate_rps)
            if deadline is not None and arrival >= deadline:
                break
            try:
                await asyncio.wait_for(self.stop.wait(), max(arrival - time.perf_counter(), 0.0))
                break  # stopped while waiting for the next arrival
            except asyncio.TimeoutError:
                pass
            started += 1
            tasks.append(asyncio.create_task(gated(self.next_job(labels), arrival)))
        await asyncio.gather(*tasks)

    async def _cancel_on_stop(self) -> None:
        await self.stop.wait()
        for task in list(self._in_flight):
            task.cancel()
