"""The time of one scheduler step: decode tokens of the running sequences plus prefill chunks.

A step is timed by the same per-operator roofline as ``predict`` (``tokspeed.timing.pass_time`` through
the setup's timer, over ``ledger.forward_ops``), cut into three parts whose sum is the step:

- ``dense(b, c)``: every depth-free operator (matmuls, norms, MoE, LM head) over ``b`` decode rows and
  ``c`` prefill tokens: ``D(b) + P(b + c) - P(b)``, with ``D(b)`` the depth-free ops of a decode batch of
  b (LM head over b rows, as ``predict``'s decode) and ``P(T)`` those of one T-token prompt pass (LM head
  over one row): the prompt tokens add their matmul work, not LM-head rows. Exact for ``c = 0``.
- ``attention over the cache`` of the decode rows, per group of layers (full attention; sliding-window or
  chunked layers): affine in the rows and in the keys they read, ``a0 + a_seq b + a_kv K``. A full layer
  reads the rows' total cached tokens K; a sliding layer at most its window per row, ``b min(K / b, W)``,
  a chunked layer (Llama 4) the current chunk: ``(K / b) mod W`` for one row, ``b W / 2`` for rows past their first
  chunk (each anywhere in its current one; ``windowed_keys``).
- ``attention of the prefill chunks``, per group: affine in the chunks' query-key pairs and tokens; a full
  layer's pairs are ``d0 c + c (c + 1) / 2`` for a chunk of c tokens after d0 cached ones, a sliding or
  chunked layer's are bounded by the window (``ledger``'s count of keys each query attends).
Each part is timed once per shape and remembered: ``D`` and ``P`` on a grid of token counts (every count
to 64, then 16 points per doubling, linear in between), each group's attention parts from three passes
each (a sliding group's at depths inside its window, where it is linear).
The timer's fixed per-pass time (``fixed_s``, links that depend on tokens) is counted once per step: the
attention parts are differences against an empty pass.

CUDA graphs: a decode-only step runs the depth-free operators over the captured batch size that holds its
rows (``Scheduler.graph_batch``: vLLM and SGLang pad the batch up to it); the padded rows attend to nothing.

Speculative decoding (``tokspeed.serving.speculative``) verifies ``k + 1`` tokens per decode row: the dense
part runs over ``b (k + 1)`` rows (LM head over all of them) and the drafter's time is added.

Left out: a hybrid model's recurrent state update is in the dense part.
"""

from __future__ import annotations

import math

from ..attended import _attended, _attended_chunked
from ..ledger import PassOps, attention_core_ops, forward_ops
from .fitted import engine_seconds

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


def windowed_keys(b: float, kv_tokens: float, window: int, chunked: bool) -> float:
    """Keys ``b`` decode rows over ``kv_tokens`` cached tokens read on a sliding (chunked) layer: each row at
    most the window (the tokens of its current chunk), the rows' mean depth standing for each row's. On a chunked
    layer rows past the first chunk sit anywhere in their current one: half a chunk each on average (the mean depth's
    own remainder would say 0 for two rows at W - 1 and W + 1); one row keeps its exact remainder."""
    if b <= 0:
        return 0.0
    depth = kv_tokens / b
    if not chunked:
        return b * min(depth, window)
    return b * (depth % window if b <= 1 or depth < window else window / 2)


def windowed_pairs(c: float, d0: float, window: int, chunked: bool) -> float:
    """Query-key pairs of a prefill chunk on a sliding (chunked) layer (``ledger``'s keys per query)."""
    return _attended_chunked(d0, int(c), window) if chunked else _attended(int(d0), int(c), window)


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
        self.pad = None               # CUDA graphs: rows a decode-only step of b sequences runs (b -> rows)
        self.straggler = None         # attention DP: c prompt tokens -> the busiest rank's extra seconds

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
        extra = self.straggler(c) if self.straggler is not None else 0.0
        if b <= 0:
            return self.prompt_dense(c) + extra
        return self.decode_dense(b) + self.prompt_dense(b + c) - self.prompt_dense(b) + extra

    def _core(self, group: int, batch: int, n: int, depth: float) -> float:
        ops = attention_core_ops(self.spec, self.kvb, batch, n, depth)
        ops = [op for op in ops if _group_of(op) == group]
        return self.time_ops(ops, batch, n) - self.time_ops(PassOps(), batch, n)

    def _groups(self) -> tuple:
        """(group, window, chunked) of the model's attention layers: 0 full (and an indexer), 1 windowed."""
        spec = self.spec
        out = [(0, 0, False)] if spec.n_sliding_layers < spec.n_layers else []
        if spec.n_sliding_layers and spec.sliding_window:
            out.append((1, spec.sliding_window, bool(spec.chunked_attention)))
        return tuple(out)

    def attn_decode(self, b: int, kv_tokens: float) -> float:
        if b <= 0:
            return 0.0
        if self._attn_dec is None:
            self._attn_dec = []
            for g, window, chunked in self._groups():
                d1, d2 = REF_DEPTHS if not window else (max(1, window // 8), window - 1)   # inside the window
                t1, t2, t3 = self._core(g, 1, 1, d1), self._core(g, REF_ROWS, 1, d1), self._core(g, REF_ROWS, 1, d2)
                a_kv = (t3 - t2) / (REF_ROWS * (d2 - d1))
                a_seq = (t2 - t1 - a_kv * (REF_ROWS - 1) * d1) / (REF_ROWS - 1)
                self._attn_dec.append((window, chunked, (t1 - a_seq - a_kv * d1, a_seq, a_kv)))
        t = 0.0
        for window, chunked, (a0, a_seq, a_kv) in self._attn_dec:
            keys = windowed_keys(b, kv_tokens, window, chunked) if window else kv_tokens
            t += a0 + a_seq * b + a_kv * keys
        return max(0.0, t)

    def prefill_pairs(self, chunks) -> tuple:
        """Query-key pairs of prefill ``chunks`` ``[(tokens, cached before)]`` per attention group."""
        return tuple(sum((windowed_pairs(c, d0, window, chunked) if window else chunk_pairs(c, d0))
                         for c, d0 in chunks) for _, window, chunked in self._groups())

    def attn_prefill(self, tokens: int, pairs) -> float:
        """Prompt-chunk attention of ``tokens`` tokens with ``pairs`` query-key pairs: a number (the full
        layers' count, every group taken as full attention) or ``prefill_pairs``' tuple."""
        if tokens <= 0:
            return 0.0
        if self._attn_pf is None:
            self._attn_pf = []
            for g, window, chunked in self._groups():
                (c1, c2), d = REF_CHUNKS, REF_PREFIX
                pts = [(c1, 0), (c2, 0), (c1, d)]
                count = (lambda c, d0: windowed_pairs(c, d0, window, chunked)) if window else chunk_pairs
                rows = [(1.0, float(c), count(c, d0), self._core(g, 1, c, d0)) for c, d0 in pts]
                self._attn_pf.append(_solve3(rows))
        per = pairs if isinstance(pairs, tuple) else (pairs,) * len(self._attn_pf)
        t = sum(p0 + p_tok * tokens + p_pair * q for (p0, p_tok, p_pair), q in zip(self._attn_pf, per))
        return max(0.0, t)

    # -- one step ---------------------------------------------------------------------------------------
    def step(self, b: int, c: int, kv_tokens: float, pairs: float) -> float:
        """Seconds of a step with ``b`` decode rows over ``kv_tokens`` cached tokens and ``c`` prefill
        tokens with ``pairs`` query-key pairs."""
        rows, drafter = self.extra_decode or (1, None)
        padded = self.pad(b) if (self.pad is not None and not c and b) else b    # graph padding: dense rows
        t = self.dense(padded * rows, c) + self.attn_decode(b, kv_tokens) + self.attn_prefill(c, pairs)
        if drafter is not None and b:
            t += drafter(b)
        return engine_seconds(t, self.gpu_scale, self.step_s)


def _group_of(op) -> int:
    """1 for the attention core of sliding-window or chunked layers, 0 for full layers (and an indexer)."""
    return 1 if op.name.endswith(("(sliding window)", "(chunked)")) else 0


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
