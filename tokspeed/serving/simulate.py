"""The event loops of the serving simulation: one engine instance serving a stream of requests
(``simulate``), and a disaggregated pair of pools (``simulate_disagg``) where a request waits for a
prefill worker, its KV cache crosses the link to a decode worker, and waits there for admission.

The instance's step (its queues, KV pool and per-family step composition) is ``instance.Instance``.
A closed-loop client (``concurrency`` > 0) sends its next request when its previous one ends; the request
reaches the engine after the step the engine already launched (``CLIENT_TURN_S``).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, replace

from ..guard.deadline import tick
from .instance import BLOCKED, Instance, Seq
from .requests import Request
from .schedulers import Scheduler

MAX_STEPS = 2_000_000
CLIENT_TURN_S = 1e-9  # a closed-loop client's next request reaches the engine after its next step began: the
#                       engine launches that step as the last one ends, while the response and the new request
#                       cross to the client and back; the request waits for that step (any turnaround > 0)


@dataclass
class Outcome:
    requests: list            # (arrival, ttft_s, e2e_s, osl) of finished requests
    itl: list                 # (seconds, tokens) per decode step
    start_s: float
    end_s: float
    output_tokens: int
    steps: int
    preemptions: int
    peak_running: int
    mean_running: float       # decoding sequences, averaged over decode steps
    stopped: str | None = None   # why the run stopped early (a request larger than the KV pool)
    queue_s: list | None = None  # disaggregated: per request, (prefill wait + prefill, KV transfer incl. link wait)


class Clients:
    """The requests still to arrive: an open loop's in arrival order, or a closed loop of ``concurrency``
    clients (the first ``concurrency`` at t = 0, each next one when a request ends)."""

    def __init__(self, requests: list[Request], concurrency: int):
        self.pending = deque(requests)
        self.closed = bool(concurrency)
        if self.closed:
            for r in requests:
                r.arrival = 0.0
            self.ready = deque(self.pending.popleft() for _ in range(min(concurrency, len(self.pending))))
        else:
            self.ready, self.pending = self.pending, deque()

    def ended(self, t: float, into: deque):
        """A request ended at ``t``: its client sends the next one into ``into``."""
        if self.pending:
            nr = self.pending.popleft()
            nr.arrival = t + CLIENT_TURN_S
            into.append(nr)


def _record(s: Seq, done: list, sent: float | None = None):
    a = s.req.arrival if sent is None else sent
    done.append((a, s.first_token_s - a, s.done_s - a, s.req.osl))


def _outcome(insts: list[Instance], done: list, t_end: float, stopped, queue_s=None) -> Outcome:
    start = min((r[0] for r in done), default=0.0)
    mean = sum(i.running_sum / i.dec_steps for i in insts if i.dec_steps)      # decoders of all instances
    return Outcome(done, [g for i in insts for g in i.itl], start, t_end,
                   int(round(sum(i.out_tokens for i in insts))), sum(i.steps for i in insts),
                   sum(i.preempt for i in insts), sum(i.peak for i in insts), mean, stopped, queue_s)


def simulate(cost, sched: Scheduler, kv_capacity: float, requests: list[Request], *, concurrency: int = 0,
             prefix_hit: float = 0.0, tokens_per_step: float = 1.0, rows_per_seq: int = 1) -> Outcome:
    """Serve ``requests`` (arrival order) on one instance with ``cost.step(b, c, kv_tokens, pairs)``;
    ``concurrency`` > 0 issues them closed-loop. Speculative decoding: each decoder takes ``rows_per_seq``
    budget tokens a step and makes ``tokens_per_step``."""
    inst = Instance(cost, sched, kv_capacity, prefix_hit=prefix_hit, tokens_per_step=tokens_per_step,
                    rows_per_seq=rows_per_seq)
    clients = Clients(requests, concurrency)
    inst.arrivals = clients.ready
    done: list = []
    stopped = None
    while True:
        inst.admit_arrivals()
        if not inst.has_work():
            if not inst.arrivals:
                break
            inst.t = max(inst.t, inst.arrivals[0].arrival)
            continue
        if inst.steps >= MAX_STEPS:
            stopped = "step limit reached"
            break
        tick()                                  # the caller's deadline (guard.deadline), if it set one
        finished = inst.step()
        if finished is BLOCKED:
            if inst.arrivals:                 # blocked until a request arrives
                inst.t = max(inst.t, inst.arrivals[0].arrival)
                continue
            stopped = inst.stopped or "requests wait for KV blocks no running sequence will free"
            break
        for s in finished:
            _record(s, done)
            clients.ended(inst.t, inst.arrivals)
    return _outcome([inst], done, inst.t, stopped or inst.stopped)


@dataclass
class Pools:
    """A disaggregated layout's instances: ``prefill`` workers make each prompt's KV cache and first
    token, ``decode`` workers the rest; ``transfer_s(request)`` the seconds its KV cache takes over a
    prefill worker's link (one transfer at a time per prefill worker: later ones wait for the link)."""
    prefill: list[Instance]
    decode: list[Instance]
    transfer_s: object


def _least_loaded(insts: list[Instance]) -> Instance:
    """The instance with the fewest requests routed and unfinished (the first of equals)."""
    return min(enumerate(insts), key=lambda e: (e[1].outstanding(), e[0]))[1]


def _insert(queue: deque, r: Request):
    """Put ``r`` into an instance's arrivals in arrival order (transfers land out of order)."""
    keys = [q.arrival for q in queue]
    queue.insert(bisect.bisect_right(keys, r.arrival), r)


def simulate_disagg(pools: Pools, requests: list[Request], *, concurrency: int = 0) -> Outcome:
    """Serve ``requests`` on disaggregated pools: each waits for the least-loaded prefill worker (a
    prompt-only request: one output token), then for its worker's link (``transfer_s``), then for
    admission on the least-loaded decode worker, where its first token leaves with the first decode step
    (TTFT) and the rest follow. Times are the client's: from its arrival at the prefill pool."""
    clients = Clients(requests, concurrency)
    ext = clients.ready
    sent: dict = {}
    link_free = [0.0] * len(pools.prefill)     # when each prefill worker's link is next free
    done, queue_s = [], []
    stopped = None
    insts = pools.prefill + pools.decode
    n_pf = len(pools.prefill)
    floor = _prefill_floor(pools, requests)
    steps = 0
    while True:
        ta = ext[0].arrival if ext else math.inf
        if ta < math.inf:          # deliver every arrival due before any instance acts
            ti = min(i.next_time() for i in insts)
            if ta <= ti:
                while ext and ext[0].arrival <= ti:
                    r = ext.popleft()
                    sent[r.rid] = (r.arrival, r.osl)
                    _least_loaded(pools.prefill).arrivals.append(replace(r, osl=1))
                continue
        times = [i.next_time() for i in insts]
        k = min(range(len(insts)), key=times.__getitem__)
        ti, inst = times[k], insts[k]
        if ti == math.inf:
            break
        if steps >= MAX_STEPS:
            stopped = "step limit reached"
            break
        tick()                                  # the caller's deadline (guard.deadline), if it set one
        inst.t = ti
        inst.admit_arrivals()
        is_prefill = k < n_pf
        horizon = math.inf if is_prefill else _horizon(times, n_pf, k, ta, floor, clients.closed)
        before = inst.steps
        finished = inst.step(horizon)
        steps += inst.steps - before
        if finished is BLOCKED:
            if inst.arrivals:                 # blocked until a request arrives
                inst.t = max(inst.t, inst.arrivals[0].arrival)
                continue
            stopped = inst.stopped or "requests wait for KV blocks no running sequence will free"
            inst.waiting.clear()
            continue
        for s in finished:
            if is_prefill:
                _hand_over(pools, inst, s, sent, link_free, queue_s)
            else:
                _record(s, done, sent[s.req.rid][0])
                clients.ended(inst.t, ext)
    t_end = max((i.t for i in pools.decode), default=0.0)
    return _outcome(pools.decode, done, t_end, stopped or next((i.stopped for i in insts if i.stopped), None),
                    queue_s)


def _hand_over(pools: Pools, inst: Instance, s: Seq, sent: dict, link_free: list, queue_s: list):
    """A prompt done on a prefill worker: its KV cache waits for the worker's link, crosses it, and joins
    the least-loaded decode worker's arrivals."""
    w = pools.prefill.index(inst)
    start = max(s.done_s, link_free[w])
    land = start + pools.transfer_s(s.req)
    link_free[w] = land
    arrival, osl = sent[s.req.rid]
    queue_s.append((s.done_s - arrival, land - s.done_s))
    _insert(_least_loaded(pools.decode).arrivals, Request(s.req.rid, land, s.req.isl, osl))


def _prefill_floor(pools: Pools, requests: list[Request]) -> tuple[float, float]:
    """Lower bounds on how soon a KV cache can land on a decode worker: (a prefill worker's next step ends and
    the shortest transfer follows, a new request's whole prefill and the shortest transfer follow). Step times
    rise with the tokens a step carries (step costs are sums of non-negative terms)."""
    xfer = min((pools.transfer_s(r) for r in requests), default=0.0)
    pf = pools.prefill[0]
    short = min((r.isl - int(r.isl * pf.prefix_hit) for r in requests), default=1)
    c = max(1, min(short, pf.sched.token_budget))

    def prompt_step(n: int) -> float:
        pairs = pf.cost.prefill_pairs([(n, 0)]) if hasattr(pf.cost, "prefill_pairs") else n * (n + 1) / 2
        return pf.cost.step(0, n, 0.0, pairs)

    return prompt_step(1) + xfer, prompt_step(c) + xfer


def _horizon(times: list, n_pf: int, k: int, ta: float, floor: tuple, closed: bool) -> float:
    """The latest time decode worker ``k`` may leap to (``times``: every instance's next time, the
    ``n_pf`` prefill workers first): no KV cache lands on it before a prefill worker's next step ends, or a
    request yet to arrive (in a closed loop: one another decode worker's next finish sends) is prefilled,
    plus the shortest transfer."""
    next_step, whole = floor
    h = min(ta + whole, min(times[:n_pf]) + next_step)
    if closed:
        others = [t for j, t in enumerate(times[n_pf:], n_pf) if j != k]
        if others:
            h = min(h, min(others) + whole)
    return h
