"""The step-level simulation of one engine instance serving a stream of requests.

Each step, as vLLM's V1 scheduler, TensorRT-LLM's in-flight batcher and llama.cpp's server build it:
1. every running sequence that has its first token decodes one token (``k + 1`` rows with speculative
   decoding, accepting ``tokens_per_step`` on average);
2. the token budget left over goes to prefill chunks: first the sequences part-way through their prompt,
   then new requests in arrival order, while the engine holds fewer than ``max_seqs`` sequences and the
   KV pool can take the request (its prompt plus ``reserve_output`` of its output);
3. a sequence whose prompt is done with this step emits its first token at the step's end (TTFT).
SGLang-style engines (``mixed = false``) run a prefill step alone whenever a prompt is waiting.
The KV pool grows by one token per decoding sequence and step past its reservation; when it is full the
newest sequence is preempted (its blocks freed; it re-prefills prompt + generated tokens later).

Decode-only stretches run as one leap to the next event (a finish, a reservation outgrown, a full pool,
an arrival): their step times are affine in the cached tokens (up to a sliding window's edge), so the
stretch's time is k x the mean of its first and last step.
Per-sequence state is O(1) per step: a global decode-step counter ``G``; a sequence that entered
decode at ``G0`` has made ``(G - G0) x tokens_per_step`` tokens and finishes at a step known in advance
(a heap of finish steps); the cached tokens of all decoders are ``sum(base) + n x G x tokens_per_step``.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

from ..guard.deadline import tick
from .requests import Request
from .schedulers import Scheduler

MAX_STEPS = 2_000_000
CLIENT_TURN_S = 1e-9  # a closed-loop client's next request reaches the engine after its next step began: the
#                       engine launches that step as the last one ends, while the response and the new request
#                       cross to the client and back; the request waits for that step (any turnaround > 0)
WATERMARK = 0.01      # share of the KV pool kept free when admitting (vLLM's watermark); no admission in a
#                       step that preempted (vLLM V1 scheduler): a preempted sequence is not re-admitted at once


@dataclass
class Seq:
    req: Request
    prompt_left: int          # prompt tokens still to prefill (after prefix-cache hits)
    cached: int               # tokens in the KV cache before the next prefill chunk
    made: float = 0.0         # output tokens made before the current decode stretch (preemption)
    reserved: float = 0.0     # KV tokens held for it
    g0: int = 0               # decode step it (re)entered decode at
    gen_id: int = 0           # bumped on preemption: stale heap entries are skipped
    g_grow: int = 0           # decode step from which its KV grows past the reservation
    growing: bool = False     # counted among the growing decoders
    first_token_s: float | None = None
    done_s: float | None = None


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


def simulate(cost, sched: Scheduler, kv_capacity: float, requests: list[Request], *, concurrency: int = 0,
             prefix_hit: float = 0.0, tokens_per_step: float = 1.0, rows_per_seq: int = 1) -> Outcome:
    """Serve ``requests`` (arrival order) with ``cost.step(b, c, kv_tokens, pairs)``; ``concurrency`` > 0
    issues them closed-loop (a new one as soon as one finishes, ``concurrency`` at a time, reaching the engine
    after the step it is already running: ``CLIENT_TURN_S``). Speculative
    decoding: each decoder takes ``rows_per_seq`` budget tokens a step and makes ``tokens_per_step``."""
    pending = deque(requests)
    if concurrency:
        for r in requests:
            r.arrival = 0.0
        issued = min(concurrency, len(pending))
        arrivals = deque(pending.popleft() for _ in range(issued))
    else:
        arrivals = pending
        pending = deque()
    waiting: deque[Seq] = deque()
    prefilling: list[Seq] = []
    finish_heap: list = []          # (finish step, seq id, gen_id, seq)
    grow_heap: list = []            # (step its KV starts to grow past the reservation, ...)
    newest: list[Seq] = []          # decoders in admission order (preemption victims from the end)
    decoding: dict = {}
    t, G = 0.0, 0
    kv_used = 0.0
    base_sum = 0.0                  # sum over decoders of (cached at G0 - G0 x tps)
    growing = 0                     # decoders whose KV grows this step
    done, itl = [], []
    out_tokens, steps, preempt, peak, running_sum, dec_steps = 0, 0, 0, 0, 0, 0
    tps = tokens_per_step
    budget, max_seqs = sched.token_budget, sched.max_seqs
    stopped = None

    def admit_arrivals():
        while arrivals and arrivals[0].arrival <= t + 1e-12:
            r = arrivals.popleft()
            hit = int(r.isl * prefix_hit)
            waiting.append(Seq(r, r.isl - hit, hit))

    def need(s: Seq) -> float:
        return s.req.isl + s.made + sched.reserve_output * max(0.0, s.req.osl - s.made)

    def admissible(s: Seq) -> bool:
        """The pool takes the request and keeps its watermark free (an idle engine takes any that fits)."""
        room = kv_capacity * (1 - WATERMARK) if (decoding or prefilling) else kv_capacity
        return kv_used + need(s) <= room

    def enter_decode(s: Seq):
        nonlocal base_sum, growing
        left = s.req.osl - s.made - 1          # the first token (or the resumed one) comes with prefill
        s.made += 1
        s.g0 = G
        n = max(0, math.ceil(left / tps - 1e-9))
        heapq.heappush(finish_heap, (G + n, s.req.rid, s.gen_id, s))
        base_sum += s.cached - G * tps
        decoding[s.req.rid] = s
        newest.append(s)
        s.g_grow = G + max(0, math.ceil((s.reserved - s.cached) / tps - 1e-9))   # past its reservation
        s.growing = s.g_grow <= G
        if s.growing:
            growing += 1
        else:
            heapq.heappush(grow_heap, (s.g_grow, s.req.rid, s.gen_id, s))

    def leave_decode(s: Seq):
        nonlocal base_sum, growing, kv_used
        del decoding[s.req.rid]
        base_sum -= s.cached - s.g0 * tps
        if s.growing:
            growing -= 1
            s.growing = False
        kv_used -= s.reserved + tps * max(0, G - s.g_grow)
        s.gen_id += 1

    while True:
        admit_arrivals()
        if not (waiting or prefilling or decoding):
            if not arrivals:
                break
            t = max(t, arrivals[0].arrival)
            continue
        if steps >= MAX_STEPS:
            stopped = "step limit reached"
            break
        tick()                                  # the caller's deadline (guard.deadline), if it set one
        # -- grow the KV of decoders; preempt the newest while the pool overflows -----------------------
        n_dec = len(decoding)
        preempted_now = False
        prefill_only = (not sched.mixed) and bool(prefilling or (waiting and admissible(waiting[0])
                                                                 and len(decoding) + len(prefilling) < max_seqs))
        if n_dec and not prefill_only:
            while grow_heap and grow_heap[0][0] <= G:
                _, _, gid, s = heapq.heappop(grow_heap)
                if s.gen_id == gid and s.req.rid in decoding and not s.growing:
                    s.growing = True
                    growing += 1
            while kv_used + growing * tps > kv_capacity and decoding:
                while newest and (newest[-1].req.rid not in decoding or newest[-1].gen_id != decoding[newest[-1].req.rid].gen_id):
                    newest.pop()
                victim = newest.pop()
                victim.made += (G - victim.g0) * tps
                leave_decode(victim)
                victim.made = min(victim.made, victim.req.osl - 1)
                victim.cached = 0
                victim.prompt_left = victim.req.isl + int(victim.made)
                victim.reserved = 0.0
                waiting.appendleft(victim)
                preempt += 1
                preempted_now = True
            n_dec = len(decoding)
        # -- build the step ------------------------------------------------------------------------------
        b = 0 if prefill_only else n_dec
        left = budget - b * rows_per_seq
        chunks = []                    # (seq, tokens)
        if sched.mixed or prefill_only or not n_dec:
            for s in prefilling:
                if left <= 0:
                    break
                c = min(s.prompt_left, left)
                chunks.append((s, c))
                left -= c
            while left > 0 and waiting and not preempted_now and len(decoding) + len(prefilling) < max_seqs:
                s = waiting[0]
                r = need(s)
                if r > kv_capacity:
                    stopped = f"a request of {s.req.isl + s.req.osl} tokens does not fit the KV pool"
                    waiting.popleft()
                    continue
                if not admissible(s):
                    break
                waiting.popleft()
                s.reserved = r
                kv_used += r
                prefilling.append(s)
                c = min(s.prompt_left, left)
                chunks.append((s, c))
                left -= c
        if not b and not chunks:
            if arrivals:                      # blocked until a request arrives
                t = max(t, arrivals[0].arrival)
                continue
            stopped = stopped or "requests wait for KV blocks no running sequence will free"
            break
        c_tok = sum(c for _, c in chunks)
        pairs = (cost.prefill_pairs([(c, s.cached) for s, c in chunks]) if hasattr(cost, "prefill_pairs")
                 else sum(c * s.cached + c * (c + 1) / 2 for s, c in chunks))
        kv_dec = base_sum + n_dec * G * tps if b else 0.0
        dt = cost.step(b, c_tok, kv_dec, pairs)
        k = 1
        if b and not chunks:          # decode-only: leap to the next event (a finish, growth, arrival, full pool)
            k = _leap(finish_heap, grow_heap, G, arrivals, t, dt, kv_capacity - kv_used, growing * tps)
        if k > 1:                     # step times are affine in the cached tokens (up to a window's edge),
            last = cost.step(b, 0, kv_dec + b * tps * (k - 1), 0.0)     # which grow by b x tps a step
            mean = (dt + last) / 2
            dt = k * mean
            itl.append((mean / tps, b * tps * k))
        elif b:
            itl.append((dt / tps, b * tps))
        t += dt
        steps += k
        # -- outcomes ------------------------------------------------------------------------------------
        if b:
            G += k
            kv_used += growing * tps * k
            dec_steps += k
            running_sum += b * k
            out_tokens += b * tps * k
            while finish_heap and finish_heap[0][0] <= G:
                _, _, gid, s = heapq.heappop(finish_heap)
                if s.gen_id != gid or s.req.rid not in decoding:
                    continue
                leave_decode(s)
                _finish(s, t, done)
                if pending:
                    nr = pending.popleft()
                    nr.arrival = t + CLIENT_TURN_S
                    arrivals.append(nr)
        for s, c in chunks:
            s.prompt_left -= c
            s.cached += c
            if s.prompt_left <= 0:
                prefilling.remove(s)
                out_tokens += 1
                if s.first_token_s is None:
                    s.first_token_s = t
                if s.req.osl - s.made <= 1:
                    s.made = s.req.osl
                    kv_used -= s.reserved
                    _finish(s, t, done)
                    if pending:
                        nr = pending.popleft()
                        nr.arrival = t + CLIENT_TURN_S
                        arrivals.append(nr)
                else:
                    enter_decode(s)
        peak = max(peak, len(decoding) + len(prefilling))
    start = min((r[0] for r in done), default=0.0)
    return Outcome(done, itl, start, t, int(round(out_tokens)), steps, preempt, peak,
                   running_sum / dec_steps if dec_steps else 0.0, stopped)


def _leap(finish_heap, grow_heap, G: int, arrivals, t: float, dt: float, kv_free: float, growth: float) -> int:
    """Decode-only steps that can run before anything changes: the next finish, the next sequence to
    outgrow its reservation, the KV pool filling up, the next arrival (at the first step's pace)."""
    k = finish_heap[0][0] - G if finish_heap else 1
    if grow_heap:
        k = min(k, grow_heap[0][0] - G)
    if growth > 0 and kv_free < float("inf"):
        k = min(k, int(kv_free // growth))
    if arrivals and dt > 0:
        k = min(k, int((arrivals[0].arrival - t) // dt) + 1)
    return max(1, k)


def _finish(s: Seq, t: float, done: list):
    s.done_s = t
    r = s.req
    done.append((r.arrival, s.first_token_s - r.arrival, t - r.arrival, r.osl))
