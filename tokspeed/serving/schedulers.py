"""How an engine schedules its steps: token budget, sequences in flight, KV pool, mixing of prefill and decode.

The defaults per engine live in ``schedulers.toml``, each with its source (engine version and file). A
llama.cpp-family engine (llama.cpp backends, ollama, LM Studio) takes the ``llama.cpp`` entry.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from ..engines.compat import runtime_of
from ..errors import UserError
from .engine_versions import release_changes

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Scheduler:
    engine: str
    token_budget: int           # tokens one step may carry (decode tokens + prefill chunk)
    max_seqs: int               # sequences running at once
    memory_fraction: float      # share of device memory the engine takes for weights + KV pool
    mixed: bool                 # prefill chunks share a step with decodes (else prefill steps run alone)
    reserve_output: float       # share of a request's output KV reserved when it is admitted (1 = no eviction)
    source: str = ""
    graph_sizes: tuple = ()     # CUDA-graph batch sizes captured first (a decode batch is padded up to one)
    graph_step: int = 0         # then every multiple of this ...
    graph_max: int = 0          # ... up to this; a larger decode batch runs eagerly, unpadded (0: no graphs)
    sliding_window: bool = True  # attends (and caches) only a sliding layer's window by default
    memory_fraction_of: str = "total"   # memory_fraction of the whole device, or of what the weights leave ("free")
    overlap_host: bool = False  # the host prepares step N+1 while the device runs step N: no host time per step
    dp_limits_per_rank: bool = True     # under attention DP, token_budget / max_seqs bound each rank (else the instance)

    def __post_init__(self):
        for name in ("token_budget", "max_seqs"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise UserError(f"scheduler {name} must be an integer >= 1, got {v!r}")
        for name, lo, hi in (("memory_fraction", 0.0, 1.0), ("reserve_output", 0.0, 1.0)):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi or (
                    name == "memory_fraction" and v == 0):
                raise UserError(f"scheduler {name} must be in ({lo}, {hi}], got {v!r}")

        if self.memory_fraction_of not in ("total", "free"):
            raise UserError(f"scheduler memory_fraction_of must be 'total' or 'free', got {self.memory_fraction_of!r}")

    def graph_batch(self, b: int) -> int:
        """The rows a decode-only step of ``b`` sequences runs: the smallest captured CUDA-graph batch size
        that holds them (the engine pads the batch to it), or ``b`` past the largest (eager)."""
        if b <= 0 or not self.graph_max or b > self.graph_max:
            return b
        head = [s for s in self.graph_sizes if s >= b]
        if head:
            return min(head)
        step = self.graph_step or 1
        return min(self.graph_max, -(-b // step) * step)

    def with_(self, **changes) -> "Scheduler":
        """A copy with some values set (None leaves a value as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})



def host_hidden(sched, pp: int = 1, speculative: bool = False) -> bool:
    """Whether the engine's host time per step hides behind the device's (SGLang's overlap scheduler; not with
    pipeline parallelism or speculative decoding, which turn it off)."""
    return bool(getattr(sched, "overlap_host", False)) and pp == 1 and not speculative


@lru_cache(maxsize=1)
def _table() -> dict:
    with open(HERE / "schedulers.toml", "rb") as f:
        return tomllib.load(f)


@lru_cache(maxsize=256)
def scheduler_key(engine_name: str) -> str:
    """The ``schedulers.toml`` entry of an engine profile name (kept per name: the table is read once)."""
    table = _table()
    if engine_name in table:
        return engine_name
    if runtime_of(engine_name) == "llama.cpp":
        return "llama.cpp"
    return "default"


def scheduler_for(engine_name: str, version=None) -> Scheduler:
    """The engine's scheduler as ``version`` of it runs (``engine_versions.toml``: CUDA graphs, host overlap; no
    version: the newest release the table lists)."""
    key = scheduler_key(engine_name)
    e = dict(_table()[key])
    for k in ("graph_source", "sliding_source", "overlap_source", "dp_limits_source"):
        e.pop(k, None)
    if "graph_sizes" in e:
        e["graph_sizes"] = tuple(e["graph_sizes"])
    e.update(release_changes(key, version))
    return Scheduler(engine=engine_name, **e)
