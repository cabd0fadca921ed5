"""The largest batch an engine would run: what public max-throughput tables quote.

``min(max_seqs, KV pool tokens / tokens per sequence)``: the engine's scheduler limit
(``schedulers.toml``: max_num_seqs, max_batch_size, -np) and how many sequences of ``tokens`` tokens
its KV pool holds (``worker``: the engine's memory share, weights, workspace and runtime taken off).
"""

from __future__ import annotations

from ..scale.options import ScaleOptions
from ..engines.compat import default_engine
from ..workload import Workload
from .fitted import fitted_for
from .schedulers import scheduler_for
from .worker import Parallelism, build_worker, full_attention


def max_batch(resolver, model, hardware, tokens: int, *, quant=None, kv_dtype="f16",
              engine=default_engine("serve"), engine_version=None, gpus: int = 1, parallel: str | None = None,
              flash_attention=None) -> dict:
    """{"batch", "kv_pool_tokens", "max_seqs", "limit"} for sequences of ``tokens`` tokens; ``resolver``:
    ``prediction_setup.resolve`` (passed in: the serving package never imports predict's setup)."""
    opts = ScaleOptions(gpus=gpus, parallel=parallel)
    r = resolver(model, hardware, quant, kv_dtype, engine, engine_version, opts, Workload(prompt=0, gen=1),
                flash_attention)
    lay = r.setup.layout.parallel if r.setup is not None else None
    par = Parallelism(tp=lay.tp, pp=lay.pp) if lay is not None else Parallelism()
    sched = scheduler_for(r.profile.name)
    if not sched.sliding_window:           # TensorRT-LLM caches a sliding layer's whole context
        r = full_attention(r)
    w = build_worker(r, par, sched, fitted_for(r.profile.name, r.hw.vendor), max(tokens, 1))
    by_kv = int(w.kv_tokens // max(tokens, 1))
    batch = min(sched.max_seqs, by_kv)
    return {"batch": batch, "kv_pool_tokens": w.kv_tokens, "max_seqs": sched.max_seqs,
            "limit": "scheduler" if sched.max_seqs <= by_kv else "kv cache", "source": sched.source}
