"""Attention data parallelism: a worker's ``dp`` attention ranks, each with its own scheduler.

Limits per rank. TensorRT-LLM's ``max_batch_size`` and ``max_num_tokens`` bound each attention-DP rank
(``enable_attention_dp``: every rank runs its own executor loop over its own requests; docs
``best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md`` sets ``max_batch_size`` per rank), and vLLM's data
parallel ranks are engine cores with their own ``max_num_seqs`` / ``max_num_batched_tokens``: the instance holds
``dp`` times each. SGLang divides its limits over the ranks instead (0.5.6 ``managers/tp_worker.py``:
``max_running_requests // dp_size``; ``server_args.py``: ``chunked_prefill_size // dp_size``): they are the
instance's. ``instance_scheduler`` turns a per-rank scheduler into the instance's one the simulator runs.

The slowest rank sets the step. Every MoE layer waits for every rank's tokens, so a step lasts as long as
its busiest rank. Decode rows spread evenly over the ranks, but a prompt chunk belongs to one request, and
a request to one rank: a step's prefill tokens are not cut ``dp`` ways. The busiest rank holds them all up
to its own token budget, beyond which the chunks are on several ranks (``busiest_rank_tokens``).
"""

from __future__ import annotations

import math

from .expert import EXPERT_ROLES
from .schedulers import scheduler_for
from .steptime import grid_below

def per_rank(engine_name: str) -> bool:
    """Whether the engine's ``max_seqs`` and ``token_budget`` bound each attention-DP rank (schedulers.toml
    ``dp_limits_per_rank``; see above)."""
    return scheduler_for(engine_name).dp_limits_per_rank


def instance_scheduler(sched, dp: int):
    """The scheduler of a worker with ``dp`` attention ranks: per-rank limits times ``dp``."""
    if dp <= 1 or not per_rank(sched.engine):
        return sched
    return sched.with_(max_seqs=sched.max_seqs * dp, token_budget=sched.token_budget * dp)


def rank_budget(sched, dp: int) -> int:
    """The prefill tokens one rank takes in a step: its own token budget."""
    if dp <= 1 or per_rank(sched.engine):
        return sched.token_budget
    return max(1, sched.token_budget // dp)


def busiest_rank_tokens(tokens: int, dp: int, budget: int) -> int:
    """Prompt tokens of the busiest of ``dp`` ranks when a step carries ``tokens`` of them: all of them up to
    one rank's ``budget`` (a chunk is never split over ranks), else at least an even share."""
    if dp <= 1:
        return tokens
    return max(math.ceil(tokens / dp), min(tokens, budget))


def rank_straggler(cost, r, budget: int, dp: int):
    """``c -> seconds``: how much longer than an even share the rank holding a step's ``c`` prompt tokens
    takes over the step's depth-free non-expert operators (``cost``'s prompt passes spread the tokens evenly;
    the experts see every rank's tokens either way). Timed on a grid of token counts (``steptime.grid_below``),
    linear in between. The prompt's attention over its own keys is left at the even share."""
    table: dict = {}

    def one_rank(t: int) -> float:
        if t <= 0:
            return 0.0
        lo, hi = grid_below(t)
        for g in (lo, hi):
            if g not in table:
                ops = [op for op in cost._depth_free(1, g) if op.role not in EXPERT_ROLES]
                table[g] = r.timer(ops, r.profile, 1, g).seconds
        return table[lo] if lo == hi else table[lo] + (table[hi] - table[lo]) * (t - lo) / (hi - lo)

    def extra(c: int) -> float:
        if c <= 0:
            return 0.0
        busy, even = busiest_rank_tokens(c, dp, budget), math.ceil(c / dp)
        return max(0.0, one_rank(busy) - one_rank(even)) if busy > even else 0.0

    return extra
