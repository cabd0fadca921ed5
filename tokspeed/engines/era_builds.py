"""Kernel paths that changed inside an era, by build month: a build takes the newest era's costs for the paths it ran.

The llama.cpp eras (eras.toml) are fitted one set of values per era, on the rows of that era. Where a backend's
kernels changed inside an era, that era's values are those of the builds its rows ran; a later build of the same era
ran the newest era's path for that cost. capabilities.toml lists such changes per engine (``within_era``: the first
build month that has each). llama.cpp-cuda's two, inside the "2024" era, whose rows are nearly all of 2024-05
(XiongjieDai's tables):

- ``graphs``: CUDA graphs (llama.cpp PR #6766, merged in 2024-05) capture a batch-1 decode pass once and replay it,
  so a kernel costs the GPU's dispatch gap instead of a host launch: the newest era's fitted ``launch_s`` (1.8 us
  against the 2024 era's 5.2; ``kernel_cost.driver_launch_s`` says the same of Vulkan on NVIDIA). Only on parts of
  compute capability 8.0 (Ampere) and later: ggml-cuda.cu ``ggml_cuda_graph_set_enabled`` sets
  ``disable_due_to_gpu_arch`` for ``cc < GGML_CUDA_CC_AMPERE`` in llama-cpp-python 0.3.16's copy (2025-08), 0.3.17's
  and 0.3.24's, for ``cc < GGML_CUDA_CC_VOLTA`` in 0.3.36's. From 2024-06: a 2024-05 build may predate the merge
  (ASSUMED; the 2024-05 rows decode as without graphs).
- ``int8_mmq``: quantized prompt matmuls on Turing and later run MMQ on the INT8 MMA units at every batch (PR #7860,
  2024-06) instead of dequantising to FP16 for cuBLAS (``mmq.py``; the 2024 era's ``quant_flops_per_core_cycle`` is
  the structural 0 of that path): the newest era's MMQ bound and its quantized matmuls' efficiency (eta_compute x
  eta_compute_format of each quantized group; the float GEMMs keep the era's). Calibration rows h0046 / h0047 are
  the PR's own table: an RTX 4090 prefills llama-3-8b Q4_K_S at 5,611 tok/s on master and 9,279 with it (1.65x).
  From 2024-07 (ASSUMED merged within 2024-06).

``at_build(profile, hw, eras)``: a fitted profile of an older era at its ``build_month``, with those costs from
``eras`` {label: profile} where the fit hands its trial profiles over (a refit then does not read the fitted.toml a
previous fit wrote), else from the engine tables. A profile from the priors alone (a device family without rows, or
no fit) keeps its priors. Read by ``profile.get_engine`` (predict) and ``calibration.evaluate.at_row_build`` (the fit
and its evaluator), so both time a row the same way.

``with_row_attention(profile, fused, eras)``: a calibration row runs attention as its flags state (``-fa 1`` on a
2024 build, whose era's default is off), with the values ``tables.with_attention`` gives a named engine (called by
``calibration.evaluate.at_row_build`` after ``at_build``).

Not modelled: the graph gate on parts before Ampere at today's builds (Volta and Turing replay graphs in 0.3.36's
copy, not in 0.3.24's; Pascal never): no calibration row runs llama.cpp-cuda on them, so they answer from the
priors, whose one per-kernel cost is a host launch ([LAUNCH] in priors.toml).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from ..quant.format_key import FORMAT_GROUPS
from .compat import capability_table, engine_defaults
from .cpu_kernels import before
from .eras import era_family, era_labels, flash_attention_available, newest_unfused_era
from .rates import compute_class
from .tables import engine_entry

QUANTIZED_GROUPS = tuple(g for g in FORMAT_GROUPS if g != "float")
# compute capability below 8.0: no CUDA graphs in the builds of the eras fitted (ggml_cuda_graph_set_enabled)
BEFORE_AMPERE = frozenset({"fermi", "kepler", "maxwell", "pascal", "pascal-gp100", "volta", "turing"})


@lru_cache(maxsize=64)
def changes_of(engine: str) -> dict:
    """{change: first build month} of ``engine``'s kernel paths that changed inside an era (capabilities.toml
    ``within_era``); {} for an engine without any or not in the table. Do not mutate: cached."""
    return capability_table(engine, "within_era")


def replays_graphs(month: str, hw, since: str) -> bool:
    """Whether a build of ``month`` ("" = today's) replays CUDA graphs for a decode pass on ``hw`` (an Ampere or later
    part, or one whose architecture is not known), the change being in builds from ``since``."""
    arch = str(getattr(hw, "arch", "") or "").lower()
    return bool(since) and not before(month, since) and arch not in BEFORE_AMPERE


def _newest(name: str, eras: dict | None):
    """The newest era's values: ``eras``' profile (the fit's trial profiles) where given, else the engine tables'
    entry (a dict)."""
    newest = era_labels(name)[-1]
    if eras:
        return eras.get(newest) or eras.get("") or list(eras.values())[-1]
    return engine_entry(name, newest)[0]


def _get(values, field: str, default=None):
    return values.get(field, default) if isinstance(values, dict) else getattr(values, field, default)


def _compute_eff(values, hw) -> float:
    """eta_compute of ``values`` on ``hw`` (``EngineProfile.compute_eff_for`` over a profile or a table entry)."""
    eta = _get(values, "eta_compute", {}) or {}
    return float(eta.get(compute_class(hw), eta.get(getattr(hw, "kind", ""), eta.get("default", 1.0))))


def _mmq_format_eff(profile, newest, hw) -> dict:
    """``profile``'s eta_compute_format with each quantized group's entry set so that its eta_compute times it is the
    newest era's product for that group: the INT8 MMQ kernels' efficiency is theirs, the float GEMMs keep the era's."""
    own, new = _compute_eff(profile, hw), _compute_eff(newest, hw)
    fmt = dict(profile.eta_compute_format)
    theirs = _get(newest, "eta_compute_format", {}) or {}
    if own > 0:
        for group in QUANTIZED_GROUPS:
            fmt[group] = new * float(theirs.get(group, 1.0)) / own
    return fmt


def at_build(profile, hw, eras: dict | None = None):
    """``profile`` (an era older than the newest, fitted) at its ``build_month`` on ``hw``: the newest era's
    ``launch_s`` where that build replays graphs there; its MMQ bound (``quant_flops_per_core_cycle``) and its
    quantized matmuls' efficiency where the build runs MMQ on INT8 tensor cores; any other profile unchanged."""
    name, label, month = getattr(profile, "name", ""), getattr(profile, "version", ""), getattr(profile, "build_month", "")
    changes = changes_of(name) if name and label and month else {}
    if not changes or label == era_labels(name)[-1] or not (eras or getattr(profile, "fitted", False)):
        return profile
    out, newest = {}, _newest(name, eras)
    if replays_graphs(month, hw, changes.get("graphs", "")) and _get(newest, "launch_s") is not None:
        out["launch_s"] = float(_get(newest, "launch_s"))
    mmq = changes.get("int8_mmq", "")
    if mmq and not before(month, mmq) and not profile.quant_flops_per_core_cycle \
            and _get(newest, "quant_flops_per_core_cycle"):
        out["quant_flops_per_core_cycle"] = float(_get(newest, "quant_flops_per_core_cycle"))
        out["eta_compute_format"] = _mmq_format_eff(profile, newest, hw)
    return replace(profile, **out) if out else profile


def launch_note(profile, hw) -> str:
    """Why ``profile``'s per-kernel cost on ``hw`` is another era's (for explain), or "": a build of an older era
    that replays CUDA graphs there."""
    name, label, month = getattr(profile, "name", ""), getattr(profile, "version", ""), getattr(profile, "build_month", "")
    since = changes_of(name).get("graphs", "") if name and label and month else ""
    if not since or label == era_labels(name)[-1] or not getattr(profile, "fitted", False) \
            or not replays_graphs(month, hw, since):
        return ""
    return (f"; a {month} build replays CUDA graphs (builds from {since}, on Ampere and later): the "
            f"{era_labels(name)[-1]} era's per-kernel cost, not the {label} era's")


def with_row_attention(profile, fused: bool | None, eras: dict | None = None):
    """``profile`` (an era's, at a row's build) running attention as the row's flags state (``fused``: ``-fa 1`` /
    ``-fa 0``; None: the era's default), as ``tables.with_attention`` makes a named engine: fused, each K/V head read
    once and the score traffic of the newest era where that era runs fused by default (none elsewhere); unfused from
    a fused era, the newest unfused era's re-read share and score traffic. From ``eras`` (the fit's trial profiles)
    where given, else the engine tables. Unchanged where the flags say nothing or what the era runs anyway, where the
    backend has no FlashAttention kernel (capabilities.toml) or the build predates it."""
    name, month = getattr(profile, "name", ""), getattr(profile, "build_month", "")
    now = getattr(profile, "flash_attention", None)
    if fused is None or now is None or bool(fused) == bool(now) or not era_family(name):
        return profile
    if fused and not (engine_defaults(name).get("flash_attention", False)
                      and flash_attention_available(name, month or None)):
        return profile
    label = era_labels(name)[-1] if fused else newest_unfused_era(name)
    if not label:
        return profile
    src = (eras.get(label) or (eras.get("") if label == era_labels(name)[-1] else None)) if eras else None
    src = src if src is not None else engine_entry(name, label)[0]
    if fused:
        runs_fused = bool(_get(src, "flash_attention", True))
        return replace(profile, flash_attention=True, kv_reread=0.0,
                       attn_bytes_per_flop=float(_get(src, "attn_bytes_per_flop", 0.0) or 0.0) if runs_fused else 0.0)
    return replace(profile, flash_attention=False, kv_reread=float(_get(src, "kv_reread", 0.0) or 0.0),
                   attn_bytes_per_flop=float(_get(src, "attn_bytes_per_flop", 0.0) or 0.0))

