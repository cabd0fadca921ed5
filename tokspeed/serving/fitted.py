"""The serving constants fitted per engine by ``scripts/fit_serving.py`` (``serving_fitted.toml``):

- ``gpu_scale``: measured step time / the roofline step time of the engine profile (how much of the
  predicted device time a serving step really takes: kernel efficiency under mixed batches);
- ``step_s``: host time per step the GPU does not hide (scheduling, input preparation, detokenizing);
- ``link_scale``: the engine's collectives (TP all-reduces, EP all-to-alls) over the link model's time
  (``tokspeed.scale.interconnect``: the link's rate and latency); NCCL reaches a share of the link rate
  and the collectives wait on the kernels around them;
- ``lead_tokens``: tokens an engine generates before a streaming client's first chunk with text (the reply's
  leading tokens carry none; HTTP benchmark clients time TTFT there): TTFT as such a client counts it is the
  engine's first token plus that many more (``metrics.client_view``).
One entry per device vendor (``serving@nvidia``, ``serving@amd``: CUDA and ROCm kernels differ), shared by the
server engines (vLLM, SGLang, TensorRT-LLM): what differs between engines and releases is mechanism (CUDA graphs,
host overlap: ``engine_versions.toml``; GEMM paths: ``gemm_device``). Each constant is shrunk toward its prior
(gpu_scale 1, link_scale 1, step_s 0) by the fit. An engine with enough rows on a vendor has its own ``gpu_scale``
(``engine@vendor``: its kernels' efficiency) pulled toward the shared one, with the vendor's host time and link
scale; that entry wins where it exists. Other engines take 1 and 0: the roofline alone.

``predict`` applies the same constants to its passes where the table has an entry for the engine
(``predict_constants``; ``engine_seconds`` is the one formula both use), so a single stream in ``predict`` and
concurrency 1 in ``serve`` give one answer.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from ..engines.compat import engine_family
from .schedulers import host_hidden, scheduler_for, scheduler_key

FILE = Path(__file__).parent / "serving_fitted.toml"
NEUTRAL = {"gpu_scale": 1.0, "step_s": 0.0, "link_scale": 1.0, "lead_tokens": 0.0}
SERVER = "server"      # the engine table's family of the engines that share serving@VENDOR


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


def shared_key(vendor: str) -> str:
    """The entry every server engine on ``vendor``'s devices shares."""
    return f"serving@{vendor.lower()}"


@lru_cache(maxsize=256)
def _key(engine_name: str, vendor: str = "") -> str | None:
    """The table entry an engine on a vendor's devices reads (None: none), kept per (name, vendor): the table is
    read once per process (``_table``)."""
    t = _table()
    for k in (fitted_key(engine_name, vendor), engine_name, scheduler_key(engine_name)):
        if t.get(k):
            return k
    if vendor and engine_family(scheduler_key(engine_name)) == SERVER and t.get(shared_key(vendor)):
        return shared_key(vendor)
    return None


def _entry(engine_name: str, vendor: str = "") -> dict:
    k = _key(engine_name, vendor)
    return _table()[k] if k else {}


def forward_for(engine_name: str, vendor: str = "") -> dict:
    """The constants fitted on the older serving rows alone (the table's ``forward`` entries: the forward-in-time
    test of ``scripts/fit_serving.py``); the neutral ones where it has none."""
    fwd = _table().get("forward", {}) if vendor else {}
    entry = fwd.get(fitted_key(engine_name, vendor)) or fwd.get(shared_key(vendor)) or {}
    return {**NEUTRAL, **{k: float(entry[k]) for k in NEUTRAL if k in entry}}


def fitted_for(engine_name: str, vendor: str = "") -> dict:
    entry = _entry(engine_name, vendor)
    return {**NEUTRAL, **{k: float(entry[k]) for k in NEUTRAL if k in entry}}


def engine_seconds(roofline_s: float, gpu_scale: float = 1.0, step_s: float = 0.0, link_s: float = 0.0,
                   link_scale: float = 1.0) -> float:
    """A pass (a step) as the engine runs it: ``gpu_scale`` x (the roofline time with its collectives at
    ``link_scale`` x the link model's ``link_s``) + the host time per step ``step_s``."""
    return gpu_scale * (roofline_s + (link_scale - 1.0) * link_s) + step_s


def predict_constants(engine_name: str, vendor: str = "", pp: int = 1) -> dict | None:
    """The serving constants ``predict`` applies to its passes for this engine on this vendor's devices (with
    ``token_budget``: the engine's prefill tokens per step, and ``source``: the table entry), or None where the
    fit has no entry (llama.cpp and the other engines: their profiles are fitted on the calibration rows).
    The host time per step is hidden as the simulator hides it (SGLang's overlap scheduler)."""
    if not _entry(engine_name, vendor):
        return None

    sched = scheduler_for(engine_name)
    fit = fitted_for(engine_name, vendor)
    if host_hidden(sched, max(1, int(pp))):
        fit["step_s"] = 0.0
    t = _table()
    key = _key(engine_name, vendor)
    extra = {k: t[key][k] for k in ("tpot_error_pct", "ttft_error_pct", "rows") if k in t[key]}
    return {**fit, "token_budget": int(sched.token_budget), "source": key, **extra}


def constants_note(fit: dict) -> str:
    """Where ``predict``'s numbers for a server engine come from (its ``engine_source``)."""
    rows = f" {fit['rows']}" if fit.get("rows") else ""
    origin = (f"shared by the server engines on the vendor, fitted on their{rows} rows"
              if str(fit.get("source", "")).startswith("serving@")
              else f"its own gpu_scale fitted on its{rows} rows, host time and link scale the vendor's")
    bands = ", ".join(f"{k} ±{fit[k + '_error_pct']:g} %" for k in ("tpot", "ttft") if k + "_error_pct" in fit)
    return (f"serving constants {fit['source']} ({origin}; gpu_scale {fit['gpu_scale']:.3f}, step_s "
            f"{fit['step_s'] * 1e3:.2f} ms, link_scale {fit['link_scale']:g}; scripts/fit_serving.py)"
            + (f", band: held-out p90 {bands}" if bands else ""))


def reload():
    _table.cache_clear()
    _key.cache_clear()          # the entries it picked were the old table's
