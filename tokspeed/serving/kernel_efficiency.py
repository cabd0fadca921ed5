"""What a server engine's kernels reach of the roofline, by kernel path: the fitted factors of
``kernel_efficiency.toml`` applied to the engine profile a serving step is timed with.

The roofline (``timing.op_time``) times a weight GEMM as ``max(flops / (peak x eta_compute x eta_compute_format),
weight bytes / (bandwidth x eta_mem x eta_format))`` and the attention core with ``eta_attn`` (math) and ``eta_kv``
(cache reads). The engine profile's eta are one figure per engine; the kernels a server engine runs reach
different fractions by path (``gemm_device.gemm_path``): a per-tensor FP8 GEMM at small M streams its weights
slower than a BF16 one, block-scaled GEMMs (FP8 128 x 128 blocks, NVFP4, MXFP4) spend part of the tensor-core
time on scales; a routed expert's grouped GEMM (``expert_compute`` / ``expert_stream``, set as the profile's
``eta_expert_*`` relative to the dense path) is another kernel again. ``kernel_profile`` multiplies the profile's format and attention factors by the path's fitted
``compute`` and ``stream`` (and the attention kernels' ``attn`` / ``kv``), each capped so no efficiency exceeds 1.

The factors are fitted on measured kernel tables of Hopper GPUs (``scripts/fit_kernel_efficiency.py``, shrunk
toward 1, the engine profile's sourced prior) and scored on Blackwell tables held out
(``benchmarks/RESULTS_kernels.md``). Only the server engines the table's ``[applies]`` lists take them: every
factor for ``engines`` (TensorRT-LLM, whose kernels the tables time), the compute and attention factors for
``compute_engines`` (vLLM, SGLang: the same class of kernels at prompt sizes, other kernels at decode batches);
llama.cpp engines' kernels are fitted elsewhere.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from functools import cache
from pathlib import Path

from ..engines.compat import engine_key
from ..quant.format_key import format_key
from .gemm_device import gemm_path

TABLE = Path(__file__).with_name("kernel_efficiency.toml")


@cache
def table() -> dict:
    """{path: {compute, stream[, expert_compute, expert_stream], source}} and {"attention": {attn, kv, source}}
    (read once); a path without expert factors runs its experts at the dense ones."""
    with TABLE.open("rb") as f:
        return tomllib.load(f)


def path_key(hw, quant, engine_name: str) -> str:
    """The kernel path of ``quant`` weights on ``hw``: ``gemm_path``'s, unless a path of the table lists the
    format under ``formats`` in place of it (``of``: a block-scaled FP8 checkpoint's own GEMMs)."""
    path = gemm_path(hw, str(quant) if quant else None, engine_name)
    for name, entry in table().items():
        if isinstance(entry, dict) and entry.get("of") == path and str(quant) in entry.get("formats", ()):
            return name
    return path


_MADE: dict = {}


def kernel_profile(profile, hw, quant):
    """``profile`` with the fitted factors of its GEMM path for ``quant`` on ``hw`` and of its attention kernels;
    an engine the table's ``[applies]`` does not list (llama.cpp, gpt-fast, transformers: other kernels) unchanged.
    One object per (profile, device, format): the timers remember rates
    per profile object."""
    applies = table()["applies"]
    name = engine_key(profile.name)
    rates_only = name in applies.get("compute_engines", ())
    if not quant or (name not in applies["engines"] and not rates_only):
        return profile
    key = (profile.name, profile.version, hw.id, str(quant))
    hit = _MADE.get(key)
    if hit is None or hit[0] is not profile or hit[1] is not hw:
        if len(_MADE) > 256:
            _MADE.clear()
        hit = _MADE[key] = (profile, hw, _fitted(profile, hw, quant, streams=not rates_only))
    return hit[2]


def _fitted(profile, hw, quant, streams: bool = True):
    """``profile`` with the path's factors; ``streams`` False: the compute and attention factors only (an engine
    whose prompt kernels the tables time but whose decode kernels they do not: ``[applies] compute_engines``)."""
    t = table()
    g = t.get(path_key(hw, quant, profile.name)) or {}
    a = t["attention"]
    group = format_key(quant).group
    eta_c = min(profile.compute_eff_for(hw), 1.0)
    c, st = g.get("compute", 1.0), g.get("stream", 1.0) if streams else 1.0
    expert_st = g.get("expert_stream", st) / st if streams else 1.0
    return replace(profile,
                   eta_compute_format={**profile.eta_compute_format,
                                       group: min(profile.compute_format_eff(quant) * c, 1.0 / eta_c)},
                   eta_format={**profile.eta_format, group: profile.format_eff(quant) * st},
                   eta_expert_compute={**profile.eta_expert_compute, group: g.get("expert_compute", c) / c},
                   eta_expert_format={**profile.eta_expert_format, group: expert_st},
                   eta_attn=min(profile.eta_attn * a["attn"], 1.0 / eta_c),
                   eta_kv=min(profile.eta_kv * (a["kv"] if streams else 1.0), 1.0))
