"""Drive many requests at a server: a warm-up, then one phase per load level.

- Concurrency phase ``c``: ``c`` workers each send a request, wait for it to finish, send the next,
  until the phase has started ``requests`` requests or ``duration_s`` has passed (requests already
  started then run to their end, so none is cut short).
- Rate phase ``R``: arrivals at ``R`` requests per second, either a Poisson process (exponential gaps
  from a seeded RNG) or evenly spaced (``constant``); at most ``max_in_flight`` run at once, and an
  arrival that finds them all busy waits (recorded as ``queued_s``; TTFT starts at the send).
- Throughput phase: ``max_in_flight`` workers back to back: as many requests as the server takes.
- Warm-up: ``warmup`` requests, one at a time, before the first phase; recorded with ``warmup: true``
  and left out of every statistic. (Per-phase warm-up/cool-down windows are applied by the summary.)
- Conversations (multi-turn prompt files): in a concurrency or throughput phase a worker plays one
  conversation turn by turn, sending the history with the server's own earlier answers; in a rate
  phase each arrival is the next turn with the transcript's own history.
- ``after_phase(labels)`` is called after each phase; True ends the run there (a sweep that saturated).
- ``halt()`` (Ctrl-C, an abort; sets ``stop``): no new request starts, requests in flight are cancelled
  and recorded as ``cancelled``; ``halt(cancel_in_flight=False)`` (a run cap) lets them finish.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from .client import CANCELLED
from .workload import Dist, PromptSource

REQUESTS_PER_WORKER = 4  # default phase length when neither --requests nor --duration: 4 waves of c requests,
MIN_REQUESTS = 10  # ... and at least 10, so p90 has some support
RATE_DEFAULT_DURATION_S = 60.0  # default length of a rate phase without --requests / --duration
ARRIVALS = ("poisson", "constant")


@dataclass
class LoadPlan:
    concurrency: list[int]
    requests: int | None  # per phase; None -> duration_s bounds the phase, or the defaults above
    duration_s: float | None
    rates: list[float] | float | None
    warmup: int
    prompt_tokens: Dist
    max_tokens: Dist
    seed: int = 0
    arrivals: str = "poisson"
    throughput: bool = False
    max_in_flight: int | None = None  # rate and throughput phases; default max(concurrency)
    prompts: PromptSource | None = None
    worker: int = 0  # this process's number among n_workers (bench-server --workers)
    n_workers: int = 1

    def share(self, total: int, active: int | None = None) -> int:
        """This worker's part of ``total`` split over ``min(n_workers, active)`` workers, the first
        ones taking one more when it does not divide (worker 0 alone: ``total``)."""
        n = self.n_workers if active is None else min(self.n_workers, active)
        if self.worker >= n:
            return 0
        return total // n + (self.worker < total % n)

    def __post_init__(self):
        if self.rates is None:
            self.rates = []
        elif isinstance(self.rates, (int, float)):
            self.rates = [float(self.rates)]
        if self.max_in_flight is None:
            self.max_in_flight = max(self.concurrency)
        if self.prompts is None:
            self.prompts = PromptSource()

    @property
    def rate_rps(self) -> float | None:  # the first rate (older callers)
        return self.rates[0] if self.rates else None

    def bounds(self, labels: dict) -> tuple[int | None, float | None]:
        """(requests, duration_s) for one phase (this worker's share of the requests), with the
        defaults filled in."""
        requests, duration_s = self.total_bounds(labels)
        return (None if requests is None else self.share(requests, labels["concurrency"])), duration_s

    def total_bounds(self, labels: dict) -> tuple[int | None, float | None]:
        if self.requests is not None or self.duration_s is not None:
            return self.requests, self.duration_s
        if labels.get("rate_rps"):
            return None, RATE_DEFAULT_DURATION_S
        return max(MIN_REQUESTS, REQUESTS_PER_WORKER * labels["concurrency"]), None

    def phases(self) -> list[dict]:
        if self.rates:
            out = [{"phase": f"rate={r:g}", "rate_rps": r, "concurrency": self.max_in_flight, "load": r,
                    "load_kind": "rate_rps"} for r in self.rates]
        else:
            out = [{"phase": f"c={c}", "concurrency": c, "rate_rps": None, "load": c, "load_kind": "concurrency"}
                   for c in self.concurrency]
        if self.throughput:
            out.append({"phase": "throughput", "concurrency": self.max_in_flight, "rate_rps": None,
                        "load": self.max_in_flight, "load_kind": "concurrency"})
        return out


@dataclass
class Job:
    """One request to make: its number, phase labels and what it sends."""

    index: int
    labels: dict
    prompt: str
    max_tokens: int
    messages: list | None = None  # chat history for multi-turn (None: one user message = prompt)
    conversation: dict | None = field(default=None, repr=False)  # live multi-turn state


Send = Callable[[Job], Awaitable[dict]]


class LoadGenerator:
    def __init__(self, plan: LoadPlan, send: Send, on_record: Callable[[dict], None],
                 on_phase: Callable[[str, int | None, float | None], None] | None = None,
                 after_phase: Callable[[dict], bool] | None = None, t_run: float | None = None):
        self.plan, self.send, self.on_record = plan, send, on_record
        self.on_phase = on_phase or (lambda label, total, duration: None)
        self.after_phase = after_phase or (lambda labels: False)
        # each worker its own seeded stream (independent arrivals); one process: the seed itself
        self.rng = random.Random(plan.seed if plan.n_workers == 1 else f"{plan.seed}/{plan.worker}")
        self.stop = asyncio.Event()
        self.cancel = asyncio.Event()  # set when requests in flight are to be cancelled (the client checks it too)
        self._next_index = plan.worker  # workers interleave: w, w+N, w+2N ... (distinct indices and prompts)
        self._next_conversation = plan.worker  # and so do conversations
        self._in_flight: set[asyncio.Task] = set()
        # t=0 of start_s/end_s; workers get the parent's (perf_counter is the system's monotonic clock,
        # the same in every process), so their records share one time line
        self._t_run = time.perf_counter() if t_run is None else t_run

    def phases(self) -> list[dict]:
        return self.plan.phases()

    def halt(self, cancel_in_flight: bool = True) -> None:
        """Start no new request; cancel those in flight unless ``cancel_in_flight`` is False (a later
        call with True still cancels them: a Ctrl-C after a run cap)."""
        self.stop.set()
        if cancel_in_flight:
            self.cancel.set()
            for task in list(self._in_flight):
                task.cancel()

    async def run(self) -> None:
        if self.plan.warmup:
            self.on_phase("warm-up", self.plan.warmup, None)
            await self._closed_loop({"phase": "warm-up", "concurrency": 1, "rate_rps": None, "warmup": True},
                                    1, self.plan.share(self.plan.warmup, 1), None)
        for labels in self.phases():
            if self.stop.is_set():
                break
            labels = {**labels, "warmup": False}
            requests, duration_s = self.plan.bounds(labels)
            self.on_phase(labels["phase"], requests, duration_s)
            labels["phase_start_s"] = time.perf_counter() - self._t_run
            if labels["rate_rps"]:
                await self._open_loop(labels, requests, duration_s)
            else:
                await self._closed_loop(labels, self.plan.share(labels["concurrency"]), requests, duration_s)
            if self.after_phase(labels) or self.stop.is_set():
                break

    def next_job(self, labels: dict, conversation: dict | None = None) -> Job:
        """The next request to make. Jobs are drawn in index order from the seeded RNG, so a run's
        prompts can be regenerated from its plan (the JSONL does not store prompt text)."""
        i = self._next_index
        self._next_index += self.plan.n_workers
        n_prompt = self.plan.prompt_tokens.draw(self.rng)
        n_out = self.plan.max_tokens.draw(self.rng)
        src = self.plan.prompts
        extra: dict = {}
        messages = None
        if conversation is not None:
            turn = conversation["turn"]
            prompt = conversation["user_turns"][turn]
            messages = conversation["history"] + [{"role": "user", "content": prompt}]
            extra = {"conversation": conversation["id"], "turn": turn}
        elif src.conversations:
            # rate phases: the next turn of the next conversation, with the transcript's own history
            flat = src.flat_turns()
            conv_i, turn, messages = flat[self._next_conversation % len(flat)]
            self._next_conversation += self.plan.n_workers
            prompt = messages[-1]["content"]
            extra = {"conversation": conv_i, "turn": turn}
        else:
            prompt, messages = src.prompt(i, n_prompt, self.rng)
            if messages is not None:
                extra = {"shared_prefix_tokens": src.shared_prefix_tokens}
        labels = {**labels, "target_prompt_tokens": n_prompt if src.synthetic else None, "max_tokens": n_out, **extra}
        return Job(i, labels, prompt, n_out, messages, conversation)

    async def _one(self, job: Job, queued_s: float = 0.0) -> dict:
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
                   "error": CANCELLED, "error_detail": "stopped before it was sent"}
        finally:
            self._in_flight.discard(task)
        rec["end_s"] = time.perf_counter() - self._t_run
        text = rec.pop("_text", None)  # the answer: kept only for a live conversation's history
        self.on_record(rec)
        return {"ok": rec.get("ok"), "_text": text}

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

        live = bool(self.plan.prompts.conversations) and not labels.get("warmup")

        async def worker():
            conv = None
            while claim():
                if live:
                    if conv is None or conv["turn"] >= len(conv["user_turns"]):
                        conv = self._new_conversation()
                    rec = await self._one(self.next_job(labels, conv))
                    if not rec.get("ok"):
                        conv = None  # a failed turn ends the conversation: its history is unknown
                        continue
                    conv["history"] = conv["history"] + [
                        {"role": "user", "content": conv["user_turns"][conv["turn"]]},
                        {"role": "assistant", "content": rec.get("_text") or ""}]
                    conv["turn"] += 1
                else:
                    await self._one(self.next_job(labels))

        await asyncio.gather(*(worker() for _ in range(workers)))

    def _new_conversation(self) -> dict:
        convs = self.plan.prompts.conversations
        i = self._next_conversation % len(convs)
        self._next_conversation += self.plan.n_workers
        c = convs[i]
        return {"id": i, "turn": 0, "history": list(c["system"]), "user_turns": c["user_turns"]}

    async def _open_loop(self, labels: dict, requests: int | None, duration_s: float | None) -> None:
        plan = self.plan
        slots = plan.share(plan.max_in_flight)
        if not slots:  # more workers than slots: this one sits the phase out
            return
        rate = labels["rate_rps"] * slots / plan.max_in_flight  # = rate / n_workers when they divide evenly
        limit = asyncio.Semaphore(slots)
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
            if started:  # the first request is sent at once; then the gaps
                arrival += self.rng.expovariate(rate) if plan.arrivals == "poisson" else 1.0 / rate
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
