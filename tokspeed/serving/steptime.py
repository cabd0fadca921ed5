"""The time of one scheduler step: decode tokens of the running sequences plus prefill chunks.

A step is timed by the same per-operator roofline as ``predict`` (``tokspeed.timing.pass_time`` through
the setup's timer, over ``ledger.forward_ops``), cut into three parts whose sum is the step:

- ``dense(b, c)``: every depth-free operator (matmuls, norms, MoE, LM head) over ``b`` decode rows and
  ``c`` prefill tokens: ``D(b) + P(b + c) - P(b)``, with ``D(b)`` the depth-free ops of a decode batch of
  b (LM head over b rows, as ``predict``'s decode) and ``P(T)`` those of one T-token prompt pass (LM head
  over one row): the prompt tokens add their matmul work, not LM-head rows. Exact for ``c = 0``.
- ``attention over the cache`` of the decode rows: affine in the rows and in their total KV tokens K
  (FLOPs and bytes of the attention core are linear in depth): ``a0 + a_seq b + a_kv K``.
- ``attention of the prefill chunks``: affine in the chunks' query-key pairs (``d0 c + c (c + 1) / 2``
  for a chunk of c tokens after d0 cached ones) and tokens.
Each part is timed once per shape and remembered: ``D`` and ``P`` on a grid of token counts (every count
to 64, then 16 points per doubling, linear in between), the two attention parts from three passes each.
The timer's fixed per-pass time (``fixed_s``, links that depend on tokens) is counted once per step: the
attention parts are differences against an empty pass.

Speculative decoding (``tokspeed.serving.speculative``) verifies ``k + 1`` tokens per decode row: the dense
part runs over ``b (k + 1)`` rows (LM head over all of them) and the drafter's time is added.

Left out: sliding-window attention is taken as full attention in the attention parts (a bound on its
cost); a hybrid model's recurrent state update is in the dense part.
"""

from __future__ import annotations

import math

from ..ledger import PassOps, attention_core_ops, forward_ops

EXACT_TOKENS = 64
POINTS_PER_DOUBLING = 16
REF_ROWS = 64                  # decode rows of the attention reference passes
REF_DEPTHS = (1024, 8192)      # KV depths of the decode attention reference passes
REF_CHUNKS = (512, 2048)       # prefill chunk sizes of the prefill attention reference passes
REF_PREFIX = 4096              # cached tokens before the third prefill reference chunk


def grid_below(n: int) -> tuple[int, int]:
    """The grid points around ``n`` tokens: (n, n) when n is a grid point."""
    if n <= EXACT_TOKENS:
        return n, n
    e = math.log2(n) * POINTS_PER_DOUBLING
    lo = round(2 ** (math.floor(e) / POINTS_PER_DOUBLING))
    hi = round(2 ** (math.ceil(e) / POINTS_PER_DOUBLING))
    return min(lo, n), max(hi, n)


def chunk_pairs(c: float, d0: float) -> float:
    """Query-key pairs of a prefill chunk of ``c`` tokens after ``d0`` cached tokens (causal)."""
    return c * d0 + c * (c + 1) / 2


class StepCost:
    """Step times of one worker. ``time_ops(ops, batch, n_tokens) -> seconds`` times a list of operators
    over the worker's devices (``timer(ops, engine, batch, n_tokens).seconds``); ``gpu_scale`` and ``step_s`` are the
    engine's fitted serving efficiency and per-step host time (``tokspeed.serving.fitted``)."""

    def __init__(self, spec, storage, kvb: float, time_ops, *, gpu_scale: float = 1.0, step_s: float = 0.0):
        self.spec, self.storage, self.kvb, self.time_ops = spec, storage, kvb, time_ops
        self.gpu_scale, self.step_s = gpu_scale, step_s
        self._decode: dict = {}
        self._prompt: dict = {}
        self._empty: dict = {}
        self._attn_dec = None
        self._attn_pf = None
        self.extra_decode = None      # speculative decoding: (rows per sequence, drafter(b) -> seconds)

    # -- the three parts -------------------------------------------------------------------------------
    def _depth_free(self, batch: int, n_tokens: int) -> PassOps:
        ops = forward_ops(self.spec, self.storage, self.kvb, batch, n_tokens, 0)
        before, _core, after = ops.segments
        out = PassOps(before + after)
        out.segments = (before, after)
        return out

    def _at(self, table: dict, n: int, make) -> float:
        if n <= 0:
            return 0.0
        lo, hi = grid_below(n)
        for g in (lo, hi):
            if g not in table:
                table[g] = make(g)
        if lo == hi:
            return table[lo]
        return table[lo] + (table[hi] - table[lo]) * (n - lo) / (hi - lo)

    def decode_dense(self, b: int) -> float:
        return self._at(self._decode, b, lambda g: self.time_ops(self._depth_free(g, 1), g, 1))

    def prompt_dense(self, t: int) -> float:
        return self._at(self._prompt, t, lambda g: self.time_ops(self._depth_free(1, g), 1, g))

    def empty(self, t: int) -> float:
        return self._at(self._empty, t, lambda g: self.time_ops(PassOps(), 1, g))

    def dense(self, b: int, c: int) -> float:
        if c <= 0:
            return self.decode_dense(b)
        if b <= 0:
            return self.prompt_dense(c)
        return self.decode_dense(b) + self.prompt_dense(b + c) - self.prompt_dense(b)

    def _core(self, batch: int, n: int, depth: float) -> float:
        return self.time_ops(attention_core_ops(self.spec, self.kvb, batch, n, depth), batch, n) \
            - self.time_ops(PassOps(), batch, n)

    def attn_decode(self, b: int, kv_tokens: float) -> float:
        if b <= 0:
            return 0.0
        if self._attn_dec is None:
            d1, d2 = REF_DEPTHS
            t1, t2, t3 = self._core(1, 1, d1), self._core(REF_ROWS, 1, d1), self._core(REF_ROWS, 1, d2)
            a_kv = (t3 - t2) / (REF_ROWS * (d2 - d1))
            a_seq = (t2 - t1 - a_kv * (REF_ROWS - 1) * d1) / (REF_ROWS - 1)
            self._attn_dec = (t1 - a_seq - a_kv * d1, a_seq, a_kv)
        a0, a_seq, a_kv = self._attn_dec
        return max(0.0, a0 + a_seq * b + a_kv * kv_tokens)

    def attn_prefill(self, tokens: int, pairs: float) -> float:
        if tokens <= 0:
            return 0.0
        if self._attn_pf is None:
            (c1, c2), d = REF_CHUNKS, REF_PREFIX
            pts = [(c1, 0), (c2, 0), (c1, d)]
            rows = [(1.0, float(c), chunk_pairs(c, d0), self._core(1, c, d0)) for c, d0 in pts]
            self._attn_pf = _solve3(rows)
        p0, p_tok, p_pair = self._attn_pf
        return max(0.0, p0 + p_tok * tokens + p_pair * pairs)

    # -- one step ---------------------------------------------------------------------------------------
    def step(self, b: int, c: int, kv_tokens: float, pairs: float) -> float:
        """Seconds of a step with ``b`` decode rows over ``kv_tokens`` cached tokens and ``c`` prefill
        tokens with ``pairs`` query-key pairs."""
        rows, drafter = self.extra_decode or (1, None)
        t = self.dense(b * rows, c) + self.attn_decode(b, kv_tokens) + self.attn_prefill(c, pairs)
        if drafter is not None and b:
            t += drafter(b)
        return self.gpu_scale * t + self.step_s


def _solve3(rows) -> tuple[float, float, float]:
    """x of ``sum(a_i x_i) = y`` for three rows ``(a0, a1, a2, y)`` (Cramer's rule)."""
    def det(m):
        return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))
    a = [list(r[:3]) for r in rows]
    y = [r[3] for r in rows]
    d = det(a)
    out = []
    for j in range(3):
        m = [row[:] for row in a]
        for i in range(3):
            m[i][j] = y[i]
        out.append(det(m) / d)
    return tuple(out)
