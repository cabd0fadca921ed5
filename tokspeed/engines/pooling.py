"""Partial pooling of an engine's fit toward its physics priors, per architecture family of the device.

The fit (``scripts/fit_calibration.py``) fits each llama.cpp backend on all of its rows. What those rows teach
transfers to a device in proportion to how many of them were measured on its own architecture family (the hardware
entry's ``arch``: ``ada``, ``rdna4``, ``xe2``, ``apple-m2``): an answer on a device of family ``f`` takes every
efficiency as the weighted geometric mean ``prior^(1-w) x fitted^w`` with

    w = n_f / (n_f + k)

``n_f`` the backend's fitted rows of family ``f`` (``fitted.toml`` ``arch_rows``) and ``k`` the pooling strength
(``pool_rows``), chosen by the fit as the one with the least held-out error (by source and by device). A family with
no rows has ``w = 0``: the answer is the backend's prior, never a neighbour's residual, and it says so
(``fitted = false``: its band is the priors' held-out band, ``tokspeed.engines.bands``).

What is blended is what the fit moves: efficiencies (a driver's decode FlashAttention efficiency,
``attn_decode_by_driver``, toward the prior's ``eta_matvec``), fixed costs and the band. The per-kernel and
per-step costs (``launch_s``, ``fixed_s``, ``launch_by_driver``) are the engine's and its driver's, not the
silicon's efficiency: where the family has rows (``w > 0``) they move by the weight of the backend's rows on the
device's vendor, ``n_v / (n_v + k)`` (``fitted.toml`` ``vendor_rows``), the rows of the same driver stack; a family
without rows keeps the priors' costs like everything else. (Pooled by the family's own weight, a CUDA family measured only on prompts
-- Blackwell: 4 rows -- took the priors' pre-CUDA-graph launch cost, 4 us against the graph era's 1.8, and decoded
llama-2-7b Q4_0 1.23x the RTX 4090's against a public 1.5x.) Attention traffic is the fit's
wherever the family has rows and the priors' of the same path (none where attention is fused) where it has none. What says which kernel runs (an era without an MMQ bound) is the
fitted profile's as it stands: a structural zero is kept.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .rates import vendor_of

# fields blended geometrically (positive efficiencies), linearly (costs that may sit at 0), or kept where either is 0
DICT_FIELDS = ("eta_mem", "eta_compute", "eta_format", "eta_compute_format")
GEOMETRIC = ("eta_attn", "eta_kv", "eta_matvec", "gemm_half_tokens", "decode_error_pct", "prefill_error_pct")
LINEAR = ("launch_s", "fixed_s")          # (and launch_by_driver, each driver's launch_s)
STRUCTURAL = ("bytes_per_core_cycle", "quant_flops_per_core_cycle", "pj_per_flop")
ATTENTION = ("attn_bytes_per_flop", "kv_reread")     # the fit's, or the prior of its path where w = 0


def arch_family(hw) -> str:
    """The architecture family of a device: its hardware entry's ``arch`` ("unknown" where none is known)."""
    return (getattr(hw, "arch", None) or "unknown").strip().lower()


def pool_weight(n_rows: int, k: float) -> float:
    """Weight of the fit for a family with ``n_rows`` fitted rows at pooling strength ``k`` (0 without rows)."""
    if n_rows <= 0:
        return 0.0
    return n_rows / (n_rows + k) if k > 0 else 1.0


def _geo(a: float, b: float, w: float) -> float:
    """prior ``a`` and fitted ``b`` mixed with weight ``w`` on ``b``: geometric where both are positive."""
    if a > 0 and b > 0:
        return math.exp((1 - w) * math.log(a) + w * math.log(b))
    return (1 - w) * a + w * b


def _dict_value(profile, field: str, key: str) -> float:
    if field == "eta_mem":
        return profile.mem_eff(key)
    if field == "eta_compute":
        return profile.compute_eff(key)
    return getattr(profile, field).get(key, 1.0)


def vendor_key(hw) -> str:
    """The vendor a device's driver stack is of (``rates.vendor_of``), "unknown" where none is stated."""
    return vendor_of(hw) or "unknown"


def blend(prior, fitted, w: float, w_cost: float | None = None):
    """``fitted`` moved toward ``prior`` (both EngineProfiles) by the weight ``w`` of the fit (1: as fitted); the
    per-kernel and per-step costs by ``w_cost`` (default ``w``; 0 wherever ``w`` is 0: the module's docstring)."""
    w_cost = w if w_cost is None or w <= 0.0 else w_cost
    if w >= 1.0 and w_cost >= 1.0:
        return fitted
    out = {}
    for f in DICT_FIELDS:
        keys = sorted(set(getattr(prior, f)) | set(getattr(fitted, f)))
        out[f] = {k: _geo(_dict_value(prior, f, k), _dict_value(fitted, f, k), w) for k in keys}
    for f in GEOMETRIC:
        out[f] = _geo(getattr(prior, f), getattr(fitted, f), w)
    for f in LINEAR:
        out[f] = (1 - w_cost) * getattr(prior, f) + w_cost * getattr(fitted, f)
    # a driver's own per-kernel cost, toward the prior's one launch cost (none left where the family has no rows)
    out["launch_by_driver"] = {d: (1 - w_cost) * prior.launch_s + w_cost * v
                               for d, v in fitted.launch_by_driver.items()} if w > 0 else {}
    # a driver's own decode FlashAttention efficiency (fa_decode), toward the prior's matrix-vector one, as one
    out["attn_decode_by_driver"] = {d: _geo(prior.eta_matvec, v, w)
                                    for d, v in fitted.attn_decode_by_driver.items()} if w > 0 else {}
    for f in STRUCTURAL:
        a, b = getattr(prior, f), getattr(fitted, f)
        out[f] = _geo(a, b, w) if a > 0 and b > 0 else b
    # attention traffic: toward the priors of the same path (fused attention has none); the path is the profile's
    # flash_attention where set (engine_entry sets it), else what its traffic says
    fused = fitted.flash_attention if fitted.flash_attention is not None else \
        (fitted.kv_reread == 0.0 and fitted.attn_bytes_per_flop == 0.0)
    for f in ATTENTION:       # what the kernels move per attention FLOP: the fit's wherever the family has rows
        out[f] = getattr(fitted, f) if w > 0 else (0.0 if fused else getattr(prior, f))
    return replace(fitted, **out)


def family_weight(entry: dict, hw) -> float:
    """The fit's weight on ``hw`` for a fitted table entry (``arch_rows``, ``pool_rows``); 1 for an entry written
    without them (a fit that does not pool)."""
    rows = entry.get("arch_rows")
    if rows is None:
        return 1.0
    return pool_weight(int(rows.get(arch_family(hw), 0)), float(entry.get("pool_rows", 0.0)))


def cost_weight(entry: dict, hw) -> float | None:
    """The fit's weight on ``hw``'s per-kernel and per-step costs (``vendor_rows``, ``pool_rows``); None for an
    entry written without ``vendor_rows`` (the family's weight then)."""
    rows = entry.get("vendor_rows")
    if rows is None:
        return None
    return pool_weight(int(rows.get(vendor_key(hw), 0)), float(entry.get("pool_rows", 0.0)))


def pooled(profile, prior, entry: dict, hw):
    """``profile`` (fitted) as it answers on ``hw``: blended toward ``prior`` by ``family_weight``; the prior itself,
    unfitted and saying why, where the device's family has no rows in the fit. The band runs from the fit's
    held-out band of families it had (``decode_error_pct``) to that of families it lacked (``decode_unseen_pct``)."""
    if hw is None or not getattr(profile, "fitted", False) or entry.get("arch_rows") is None:
        return profile
    fam = arch_family(hw)
    n = int(entry["arch_rows"].get(fam, 0))
    w, wc = family_weight(entry, hw), cost_weight(entry, hw)
    if w >= 1.0 and (wc is None or wc >= 1.0):
        return replace(profile, arch_rows=n)
    prior = replace(prior, **{f"{k}_error_pct": float(entry.get(f"{k}_unseen_pct", getattr(prior, f"{k}_error_pct")))
                              for k in ("decode", "prefill")})
    mixed = blend(prior, profile, w, wc)
    if w <= 0.0:
        return replace(mixed, fitted=False, arch_rows=0,
                       source=f"priors: no {fam} rows in {profile.name}'s fit "
                              f"({', '.join(sorted(entry['arch_rows']))}); {prior.source}")
    return replace(mixed, arch_rows=n, source=f"{profile.source}; pooled toward the priors for {fam} ({n} rows: "
                                              f"weight {w:.2f} = {n} / ({n} + {entry['pool_rows']:g}))")
