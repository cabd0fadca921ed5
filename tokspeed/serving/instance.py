"""One engine instance's scheduler state and its step (vLLM ``v1/core/sched``: the running and waiting
queues over the KV pool, ``kvpool``; the step's composition per engine family, ``policy``).

Each step, as vLLM's V1 scheduler, TensorRT-LLM's in-flight batcher and llama.cpp's server build it:
1. every running sequence that has its first token decodes one token (``k + 1`` rows with speculative
   decoding, accepting ``tokens_per_step`` on average);
2. the token budget left over goes to prefill chunks: first the sequences part-way through their prompt,
   then new requests in arrival order, while the engine holds fewer than ``max_seqs`` sequences and the
   KV pool can take the request (its prompt plus ``reserve_output`` of its output);
3. a sequence whose prompt is done with this step emits its first token at the step's end (TTFT).
The KV pool grows by one token per decoding sequence and step past its reservation; when it is full the
newest sequence is preempted (its blocks freed; it re-prefills prompt + generated tokens later). No
admission in a step that preempted (vLLM V1): a preempted sequence is not re-admitted at once.

Decode-only stretches run as one leap to the next event (a finish, a reservation outgrown, a full pool,
an arrival, the caller's horizon): their step times are affine in the cached tokens (up to a sliding
window's edge), so the stretch's time is k x the mean of its first and last step.
Per-sequence state is O(1) per step: a global decode-step counter ``G``; a sequence that entered
decode at ``G0`` has made ``(G - G0) x tokens_per_step`` tokens and finishes at a step known in advance
(a heap of finish steps); the cached tokens of all decoders are ``sum(base) + n x G x tokens_per_step``.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

from .kvpool import KVPool
from .policy import prefill_only, takes_prompts
from .requests import Request
from .schedulers import Scheduler

BLOCKED = "blocked"       # a step with nothing to run: waiting on an arrival or on blocks none will free


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


class Instance:
    """One engine instance: ``cost.step(b, c, kv_tokens, pairs)`` seconds a step, ``sched``'s budget and
    caps, a KV pool of ``kv_capacity`` tokens. ``arrivals``: requests routed to it, in arrival order."""

    def __init__(self, cost, sched: Scheduler, kv_capacity: float, *, prefix_hit: float = 0.0,
                 tokens_per_step: float = 1.0, rows_per_seq: int = 1):
        self.cost, self.sched = cost, sched
        self.pool = KVPool(kv_capacity, sched.reserve_output)
        self.prefix_hit, self.tps, self.rows = prefix_hit, tokens_per_step, rows_per_seq
        self.arrivals: deque[Request] = deque()
        self.waiting: deque[Seq] = deque()
        self.prefilling: list[Seq] = []
        self.decoding: dict = {}
        self.finish_heap: list = []     # (finish step, rid, gen_id, seq)
        self.grow_heap: list = []       # (step its KV starts to grow past the reservation, ...)
        self.newest: list[Seq] = []     # decoders in admission order (preemption victims from the end)
        self.t, self.G = 0.0, 0
        self.base_sum = 0.0             # sum over decoders of (cached at G0 - G0 x tps)
        self.growing = 0                # decoders whose KV grows this step
        self.itl: list = []
        self.out_tokens, self.steps, self.preempt, self.peak = 0.0, 0, 0, 0
        self.running_sum, self.dec_steps = 0, 0
        self.stopped: str | None = None

    # -- queues ------------------------------------------------------------------------------------------
    def admit_arrivals(self):
        while self.arrivals and self.arrivals[0].arrival <= self.t + 1e-12:
            r = self.arrivals.popleft()
            hit = int(r.isl * self.prefix_hit)
            self.waiting.append(Seq(r, r.isl - hit, hit))

    def has_work(self) -> bool:
        return bool(self.waiting or self.prefilling or self.decoding)

    def outstanding(self) -> int:
        """Requests routed here and not finished (a router's load measure)."""
        return len(self.arrivals) + len(self.waiting) + len(self.prefilling) + len(self.decoding)

    def next_time(self) -> float:
        """When this instance next acts: now if it has work, else at its next arrival (inf: never)."""
        if self.has_work():
            return self.t
        return max(self.t, self.arrivals[0].arrival) if self.arrivals else math.inf

    def room_for_seqs(self) -> bool:
        return len(self.decoding) + len(self.prefilling) < self.sched.max_seqs

    def need(self, s: Seq) -> float:
        return self.pool.need(s.req.isl, s.req.osl, s.made)

    def admissible(self, s: Seq) -> bool:
        return self.pool.admissible(self.need(s), bool(self.decoding or self.prefilling))

    # -- decoders ----------------------------------------------------------------------------------------
    def enter_decode(self, s: Seq):
        tps, G = self.tps, self.G
        left = s.req.osl - s.made - 1          # the first token (or the resumed one) comes with prefill
        s.made += 1
        s.g0 = G
        n = max(0, math.ceil(left / tps - 1e-9))
        heapq.heappush(self.finish_heap, (G + n, s.req.rid, s.gen_id, s))
        self.base_sum += s.cached - G * tps
        self.decoding[s.req.rid] = s
        self.newest.append(s)
        s.g_grow = G + max(0, math.ceil((s.reserved - s.cached) / tps - 1e-9))   # past its reservation
        s.growing = s.g_grow <= G
        if s.growing:
            self.growing += 1
        else:
            heapq.heappush(self.grow_heap, (s.g_grow, s.req.rid, s.gen_id, s))

    def leave_decode(self, s: Seq):
        del self.decoding[s.req.rid]
        self.base_sum -= s.cached - s.g0 * self.tps
        if s.growing:
            self.growing -= 1
            s.growing = False
        self.pool.used -= s.reserved + self.tps * max(0, self.G - s.g_grow)
        s.gen_id += 1

    def _grow_and_preempt(self) -> bool:
        """Decoders past their reservation grow; the newest are preempted while the pool overflows."""
        while self.grow_heap and self.grow_heap[0][0] <= self.G:
            _, _, gid, s = heapq.heappop(self.grow_heap)
            if s.gen_id == gid and s.req.rid in self.decoding and not s.growing:
                s.growing = True
                self.growing += 1
        preempted = False
        while self.pool.overflows(self.growing * self.tps) and self.decoding:
            while self.newest and (self.newest[-1].req.rid not in self.decoding
                                   or self.newest[-1].gen_id != self.decoding[self.newest[-1].req.rid].gen_id):
                self.newest.pop()
            victim = self.newest.pop()
            victim.made += (self.G - victim.g0) * self.tps
            self.leave_decode(victim)
            victim.made = min(victim.made, victim.req.osl - 1)
            victim.cached = 0
            victim.prompt_left = victim.req.isl + int(victim.made)
            victim.reserved = 0.0
            self.waiting.appendleft(victim)
            self.preempt += 1
            preempted = True
        return preempted

    # -- prompts -----------------------------------------------------------------------------------------
    def _chunks(self, left: int, admit: bool) -> list:
        """(seq, tokens) prompt chunks under ``left`` budget tokens: running prompts, then new requests."""
        chunks = []
        for s in self.prefilling:
            if left <= 0:
                break
            c = min(s.prompt_left, left)
            chunks.append((s, c))
            left -= c
        while left > 0 and self.waiting and admit and self.room_for_seqs():
            s = self.waiting[0]
            r = self.need(s)
            if r > self.pool.capacity:
                self.stopped = f"a request of {s.req.isl + s.req.osl} tokens does not fit the KV pool"
                self.waiting.popleft()
                continue
            if not self.admissible(s):
                break
            self.waiting.popleft()
            s.reserved = r
            self.pool.used += r
            self.prefilling.append(s)
            c = min(s.prompt_left, left)
            chunks.append((s, c))
            left -= c
        return chunks

    # -- one step ----------------------------------------------------------------------------------------
    def step(self, horizon: float = math.inf):
        """Run the next step (or a decode-only leap that starts no step past ``horizon``): the sequences it
        finished, in order, or ``BLOCKED`` when nothing can run."""
        alone = prefill_only(self)
        n_dec = len(self.decoding)
        preempted = self._grow_and_preempt() if n_dec and not alone else False
        n_dec = len(self.decoding)
        b = 0 if alone else n_dec
        chunks = self._chunks(self.sched.token_budget - b * self.rows, not preempted) \
            if takes_prompts(self, n_dec, alone) else []
        if not b and not chunks:
            return BLOCKED
        dt, k = self._time(b, chunks, horizon)
        self.t += dt
        self.steps += k
        finished = self._decoded(b, k) if b else []
        finished += self._prefilled(chunks)
        self.peak = max(self.peak, len(self.decoding) + len(self.prefilling))
        return finished

    def _time(self, b: int, chunks: list, horizon: float) -> tuple[float, int]:
        """(seconds, steps) of the step, a decode-only one leaping to the next event."""
        cost, tps = self.cost, self.tps
        c_tok = sum(c for _, c in chunks)
        pairs = (cost.prefill_pairs([(c, s.cached) for s, c in chunks]) if hasattr(cost, "prefill_pairs")
                 else sum(c * s.cached + c * (c + 1) / 2 for s, c in chunks))
        kv_dec = self.base_sum + b * self.G * tps if b else 0.0
        dt = cost.step(b, c_tok, kv_dec, pairs)
        k = self._leap(dt, horizon) if b and not chunks else 1
        if k > 1:                     # step times are affine in the cached tokens (up to a window's edge),
            last = cost.step(b, 0, kv_dec + b * tps * (k - 1), 0.0)     # which grow by b x tps a step
            mean = (dt + last) / 2
            self.itl.append((mean / tps, b * tps * k))
            return k * mean, k
        if b:
            self.itl.append((dt / tps, b * tps))
        return dt, 1

    def _leap(self, dt: float, horizon: float) -> int:
        """Decode-only steps that can run before anything changes: the next finish, the next sequence to
        outgrow its reservation, the KV pool filling up, the next arrival or the horizon (at the first
        step's pace)."""
        k = self.finish_heap[0][0] - self.G if self.finish_heap else 1
        if self.grow_heap:
            k = min(k, self.grow_heap[0][0] - self.G)
        growth = self.growing * self.tps
        free = self.pool.capacity - self.pool.used
        if growth > 0 and free < math.inf:
            k = min(k, int(free // growth))
        nxt = min(self.arrivals[0].arrival if self.arrivals else math.inf, horizon)
        if nxt < math.inf and dt > 0:
            k = min(k, int((nxt - self.t) // dt) + 1)
        return max(1, k)

    def _decoded(self, b: int, k: int) -> list[Seq]:
        self.G += k
        self.pool.used += self.growing * self.tps * k
        self.dec_steps += k
        self.running_sum += b * k
        self.out_tokens += b * self.tps * k
        out = []
        while self.finish_heap and self.finish_heap[0][0] <= self.G:
            _, _, gid, s = heapq.heappop(self.finish_heap)
            if s.gen_id != gid or s.req.rid not in self.decoding:
                continue
            self.leave_decode(s)
            s.done_s = self.t
            out.append(s)
        return out

    def _prefilled(self, chunks: list) -> list[Seq]:
        out = []
        for s, c in chunks:
            s.prompt_left -= c
            s.cached += c
            if s.prompt_left > 0:
                continue
            self.prefilling.remove(s)
            self.out_tokens += 1
            if s.first_token_s is None:
                s.first_token_s = self.t
            if s.req.osl - s.made <= 1:
                s.made = s.req.osl
                self.pool.used -= s.reserved
                s.done_s = self.t
                out.append(s)
            else:
                self.enter_decode(s)
        return out
