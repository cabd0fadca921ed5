"""The serving constants fitted per engine by ``scripts/fit_serving.py`` (``serving_fitted.toml``):

- ``gpu_scale``: measured step time / the roofline step time of the engine profile (how much of the
  predicted device time a serving step really takes: kernel efficiency under mixed batches);
- ``step_s``: host time per step the GPU does not hide (scheduling, input preparation, detokenizing);
- ``link_scale``: the engine's collectives (TP all-reduces, EP all-to-alls) over the link model's time
  (``tokspeed.scale.interconnect``: the link's rate and latency); NCCL reaches a share of the link rate
  and the collectives wait on the kernels around them.
Entries are per engine and device vendor (``vllm@amd``: ROCm kernels) where the fit had rows for the pair,
else per engine. An engine the fit has no rows for takes 1 and 0: the roofline alone.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from .schedulers import scheduler_key

FILE = Path(__file__).parent / "serving_fitted.toml"
NEUTRAL = {"gpu_scale": 1.0, "step_s": 0.0, "link_scale": 1.0}


@lru_cache(maxsize=1)
def _table() -> dict:
    if not FILE.exists():
        return {}
    with open(FILE, "rb") as f:
        return tomllib.load(f)


def fitted_key(engine_name: str, vendor: str = "") -> str:
    """The table entry of an engine on a vendor's devices: ``engine@vendor`` (its kernels differ per
    backend: CUDA, ROCm), else the engine's own entry."""
    return f"{scheduler_key(engine_name)}@{vendor.lower()}" if vendor else scheduler_key(engine_name)


def fitted_for(engine_name: str, vendor: str = "") -> dict:
    t = _table()
    entry = t.get(fitted_key(engine_name, vendor)) or t.get(engine_name) or t.get(scheduler_key(engine_name)) or {}
    return {**NEUTRAL, **{k: float(entry[k]) for k in NEUTRAL if k in entry}}


def reload():
    _table.cache_clear()
