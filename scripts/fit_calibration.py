#!/usr/bin/env python3
"""Fit the engine profiles on data/validation/calibration.csv and report the error per device family.

    python scripts/fit_calibration.py [--csv PATH] [--write] [--engines llama.cpp-cuda ...]

Per engine backend, the EngineProfile parameters (eta_mem per memory technology -- hbm, gddr, lpddr,
ddr --, bytes_per_core_cycle (the kernel bound: cores x clock x bytes, tokspeed.engines.issue),
eta_format per weight-format group (and ggml-vulkan's subgroup MMVQ path's: engines/vk_matvec.py), eta_kv, launch_s,
fixed_s (and per Vulkan driver launch_by_driver and the decode FlashAttention's attn_decode_by_driver:
tokspeed/engines/fa_decode.py) for decode; eta_compute per hardware kind,
eta_compute_format per group, eta_attn, attn_bytes_per_flop, gemm_half_tokens and, in the newest era,
quant_flops_per_core_cycle (the MMQ bound) for prefill; eta_matvec for batched decode; on GeForce,
FP16-accumulating engines see twice the listed tensor peak) minimise the squared log error of predicted
vs measured tok/s. Each row belongs to an engine era (its ``date``/``build``,
``tokspeed/engines/eras.toml``): the newest era in the rows carries the values above; each older era
has its own ``launch_s``, ``fixed_s`` and ``attn_bytes_per_flop``, and multipliers of the achievable
bandwidth (``era_mem``, applied to both of its bounds) and prefill compute efficiency (``era_compute``); the
eras whose attention ran unfused by default share one ``kv_reread`` (the share of unfused attention's
per-query-head K/V re-reads that reach memory), 0 in an era with FlashAttention on;
older eras have no MMQ bound (2023 builds had no INT8-tensor-core MMQ; the 2024 era gained it in 2024-06,
but 316 of its 365 rows are from May 2024: a simplification). The fit uses:

- a robust loss (soft L1 with its knee at 10 % error): a handful of rows are measured under conditions
  the row does not state (throttled cards, old builds) and must not drag the fit;
- a prior term per parameter pulling it toward ``priors.toml`` (width: a factor 1.65 for
  efficiencies and era multipliers (prior 1), 10 us for launch_s, 1 ms for fixed_s, 0.02 B/FLOP for
  attn_bytes_per_flop, whose prior is 0 in an era that runs FlashAttention by default, 0.5 for kv_reread
  (prior 1 on Metal, 0 elsewhere: priors.toml [KVHEAD]); one width costs
  as much as one row 10 % off),
  so a parameter the data does not constrain stays at its documented prior;
- physical bounds: 0 < eta_mem <= 1, eta_format <= 1 (dequantising never beats plain F16), eta_compute
  <= 1.3, launch_s in [0, 50 us], kv_reread in [0, 1]; the combined compute efficiency is clamped at 1 in op_time;
- leave-one-family-out validation: for each device family (NVIDIA by architecture, Apple by M
  generation, other vendors by vendor) the engine is refitted without that family and the family is
  predicted, which is the situation of a user with hardware that is not in the file.

Prints a table per engine x family (n, median and p90 absolute % error for decode and prefill, in-sample
and held-out), the held-out errors against the targets, and the coverage of the error bands.
``--write`` writes tokspeed/engines/fitted.toml (deterministic) with the p90 error band, and
tokspeed/engines/bands.toml: the factors that widen that band off the data (tokspeed/calibration/holdout.py), from
the errors of rows held out by vendor and by backend (the priors), of each backend refitted without a weight-format
group, without its deeper rows, without its MoE rows (``leave_condition_out``), and of its multi-device rows.
``--docs`` writes the coverage (in band, median band) per engine at each distance into docs/calibration.md.
Needs numpy and scipy (the tokspeed package itself does not).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tokspeed.calibration import load_rows  # noqa: E402
from tokspeed.stats import percentile
from tokspeed.calibration.family_bias import family_bias_table  # noqa: E402
from tokspeed.calibration.fast import RowSet, build, predict_rows  # noqa: E402
from tokspeed.calibration.holdout import (CONDITIONS, band_results, bands_toml, held_out_tables,  # noqa: E402
                                          is_moe)
from tokspeed.calibration.memory_edge import choose_edge, edge_bands, row_fills  # noqa: E402
from tokspeed.calibration.pooled_holdout import (POOL_GRID, SCHEMES, backend_bands, band_cells,  # noqa: E402
                                                 band_rows, choose_k, era_blend, held_out_eras, pooled_errors,
                                                 pooled_tables, seen_mask, test_masks)
from tokspeed.engines.backends import F32_GEMM, bf16_as_f32  # noqa: E402
from tokspeed.engines.driver import kernel_cost_sources  # noqa: E402
from tokspeed.engines.kernel_cost import own_cost_drivers  # noqa: E402
from tokspeed.engines.eras import era_info, unfused_attention  # noqa: E402
from tokspeed.engines.fa_decode import fit_drivers as attn_decode_drivers  # noqa: E402
from tokspeed.engines.memory import memory_class  # noqa: E402
from tokspeed.engines.mmq import DP4A_FORMAT_PREFIX  # noqa: E402
from tokspeed.engines.pooling import arch_family, vendor_key  # noqa: E402
from tokspeed.engines.rates import mmq_kernel  # noqa: E402
from tokspeed.engines.vk_matvec import MMVQ_SUBGROUP, runs_mmvq_subgroup  # noqa: E402
from tokspeed.toml_writer import Inline, dumps  # noqa: E402
from tokspeed.engines.profile import EngineProfile, prior_profile
from tokspeed.quant.format_key import format_group

BACKENDS = ["llama.cpp-cuda", "llama.cpp-metal", "llama.cpp-vulkan", "llama.cpp-rocm", "llama.cpp-sycl", "gpt-fast"]
FITTED = REPO / "tokspeed" / "engines" / "fitted.toml"
ROBUST_SCALE = 0.1      # soft-L1 knee on the log error (~10 %)
SIGMA_ETA = 0.5         # prior width on log(eta): a factor e^0.5 = 1.65
SIGMA_LAUNCH_US = 10.0
SIGMA_FIXED_MS = 1.0
SIGMA_ERA = SIGMA_ETA   # prior width on log(era multiplier); 0.2 was tried: held-out medians moved < 1 point
SIGMA_ATTN_BYTES = 0.02  # prior width on attn_bytes_per_flop (B/FLOP): 2/3 of the unfused prior 0.031
SIGMA_REREAD = 0.5      # prior width on kv_reread, a share in [0, 1]: half its range
HOLDOUT_NFEV = 30       # steps of a held-out refit started at the full fit (each a Jacobian: ~35 evaluations)



@dataclass(frozen=True)
class Param:
    field: str          # EngineProfile field, or era_mem / era_compute (multipliers of an older era)
    key: str | None     # dict key for dict fields
    prior: float
    lo: float
    hi: float
    unit: float = 1.0   # x * unit = value in SI (launch_s in us, fixed_s in ms)
    log_prior: bool = True
    sigma: float = SIGMA_ETA
    era: str = ""       # "" = shared by every era (or the newest era's value of a per-era field)

    @property
    def label(self) -> str:
        base = f"{self.field}[{self.key}]" if self.key else self.field
        return f"{base}@{self.era}" if self.era else base


def _clip(v, lo, hi):
    return min(max(v, lo * 1.0001 if lo > 0 else lo), hi)


def eras_of(rows) -> list[str]:
    """Engine eras present in ``rows``, oldest first (the labels sort as years)."""
    return sorted({r.era for r in rows})


def attn_prior(prior: EngineProfile, engine: str, era: str) -> float:
    """Prior of attn_bytes_per_flop in an era: none where the era runs FlashAttention by default (the
    scores stay in on-chip memory), else the engine's documented unfused-attention prior."""
    return 0.0 if era_info(engine, era).get("flash_attention") else prior_profile(engine).attn_bytes_per_flop


def dp4a_prompt(prior: EngineProfile, row) -> bool:
    """Whether ``row``'s prompt matmuls run on the DP4A MMQ kernels (``rates.mmq_kernel`` at its micro-batch)."""
    return mmq_kernel(prior, row.hw, row.quant, min(row.prompt, row.ubatch)) == "dp4a"


def param_space(prior: EngineProfile, rows) -> list[Param]:
    """The parameters the rows can inform, each with its prior and physical bounds. The newest era in
    the rows carries the base values; each older era gets multipliers of the achievable bandwidth
    (``era_mem``) and of the prefill compute efficiency (``era_compute``), and its own ``launch_s``,
    ``fixed_s`` and ``attn_bytes_per_flop``: what changed in the engine between eras. The eras whose attention
    ran unfused by default share one ``kv_reread`` (the share of the per-query-head K/V re-reads that reach
    memory: the same broadcast matmuls on the same caches); it is 0 in an era with FlashAttention on."""
    dec = [r for r in rows if r.kind == "decode"]
    pre = [r for r in rows if r.kind == "prefill"]
    newest = prior.version or (eras_of(rows) or [""])[-1]
    eras = sorted(set(eras_of(rows)) | {newest})
    out = []
    for cls in sorted({memory_class(r.hw) for r in rows}):
        out.append(Param("eta_mem", cls, _clip(prior.mem_eff(cls), 0.05, 1.0), 0.05, 1.0))
    if prior.bytes_per_core_cycle and dec:
        out.append(Param("bytes_per_core_cycle", None, prior.bytes_per_core_cycle, 0.5, 64.0))
    groups = sorted({format_group(r.quant) for r in rows} - {"float"})
    for g in groups:
        out.append(Param("eta_format", g, _clip(prior.eta_format.get(g, 1.0), 0.2, 1.0), 0.2, 1.0))
    # the Q8_1 matrix-vector shaders in subgroup-sized workgroups (Mesa ANV): a factor of their own times the group's
    if any(r.kind == "decode" and runs_mmvq_subgroup(prior.name, r.hw, r.quant, r.month) for r in rows):
        out.append(Param("eta_format", MMVQ_SUBGROUP, _clip(prior.eta_format.get(MMVQ_SUBGROUP, 1.0), 0.2, 1.0),
                         0.2, 1.0))
    if dec:
        out.append(Param("eta_kv", None, _clip(prior.eta_kv, 0.1, 1.0), 0.1, 1.0))
    abpf = bool(prior_profile(prior.name).attn_bytes_per_flop)   # the engine's unfused prior (0 in a fused newest era)
    for era in eras:
        e = "" if era == newest else era
        er = [r for r in rows if r.era == era]
        if e:
            out.append(Param("era_mem", None, 1.0, 0.3, 1.5, sigma=SIGMA_ERA, era=e))
            if any(r.kind == "prefill" for r in er):
                out.append(Param("era_compute", None, 1.0, 0.3, 2.0, sigma=SIGMA_ERA, era=e))
        if any(r.kind == "decode" for r in er):
            out.append(Param("launch_s", None, prior.launch_s * 1e6, 0.0, 50.0, 1e-6, False, era=e))
            out.append(Param("fixed_s", None, prior.fixed_s * 1e3, 0.0, 20.0, 1e-3, False, era=e))
        if not e:       # the newest era's per-kernel cost under each driver its decode rows ran (kernel_cost.py)
            for d in own_cost_drivers(prior.name, er):
                out.append(Param("launch_by_driver", d, prior.launch_s * 1e6, 0.0, 50.0, 1e-6, False))
            for d in attn_decode_drivers(prior.name, er):    # its decode FlashAttention's loop (fa_decode.py)
                out.append(Param("attn_decode_by_driver", d, _clip(prior.eta_matvec, 0.005, 1.0), 0.005, 1.0))
        if not e and prior.quant_flops_per_core_cycle and any(r.kind == "prefill" and format_group(r.quant) != "float"
                                                    for r in er):
            out.append(Param("quant_flops_per_core_cycle", None, prior.quant_flops_per_core_cycle, 16.0, 8192.0,
                             era=e))
        if not e and prior.pj_per_flop and any(r.kind == "prefill" and r.hw.tdp_w for r in rows):
            out.append(Param("pj_per_flop", None, prior.pj_per_flop, 0.2, 50.0))   # an older era's: / era_compute
        if abpf and any(r.kind == "prefill" for r in er):
            out.append(Param("attn_bytes_per_flop", None, attn_prior(prior, prior.name, era or newest), 0.0, 0.2,
                             log_prior=False, sigma=SIGMA_ATTN_BYTES, era=e))
    # one share of K/V re-reads for every era whose attention ran unfused: the same broadcast matmuls and caches
    if any(r.kind == "decode" and unfused_attention(prior.name, r.era) for r in rows):
        out.append(Param("kv_reread", None, prior_profile(prior.name).kv_reread, 0.0, 1.0, log_prior=False,
                         sigma=SIGMA_REREAD))
    if pre:
        for kind in sorted({r.hw.kind for r in pre}):
            out.append(Param("eta_compute", kind, _clip(prior.compute_eff(kind), 0.02, 1.3), 0.02, 1.3))
        for g in sorted({format_group(r.quant) for r in pre} - {"float"}):
            out.append(Param("eta_compute_format", g, _clip(prior.compute_format_eff(g.upper()), 0.2, 1.5),
                             0.2, 1.5))
        # the DP4A MMQ kernels unpack each format with code of their own: a factor per group their rows inform
        for g in sorted({format_group(r.quant) for r in pre if dp4a_prompt(prior, r)} - {"float"}):
            out.append(Param("eta_compute_format", DP4A_FORMAT_PREFIX + g,
                             _clip(prior.compute_format_eff(g.upper()), 0.2, 1.5), 0.2, 1.5))
        # BF16 weights converted for an F32 GEMM on the vector ALUs (backends.F32_GEMM): the SGEMM's own share
        if any(bf16_as_f32(prior.name, r.hw, r.quant, min(r.prompt, r.ubatch)) for r in pre):
            out.append(Param("eta_compute_format", F32_GEMM,
                             _clip(prior.eta_compute_format.get(F32_GEMM, 1.0), 0.2, 8.0), 0.2, 8.0))
        out.append(Param("eta_attn", None, _clip(prior.eta_attn, 0.05, 1.0), 0.05, 1.0))
    if pre or any(r.batch > 1 for r in dec):
        out.append(Param("gemm_half_tokens", None, max(prior.gemm_half_tokens, 1.0), 1.0, 512.0))
    if any(r.batch > 1 for r in dec):
        out.append(Param("eta_matvec", None, _clip(prior.eta_matvec, 0.02, 1.0), 0.02, 1.0))
    return out


def make_profile(prior: EngineProfile, space: list[Param], x):
    """The trial profile for parameters ``x``: {era: EngineProfile} when the rows span eras (the
    newest under its label, older ones with their multipliers applied), else one EngineProfile."""
    dicts = {f: dict(getattr(prior, f)) for f in ("eta_mem", "eta_compute", "eta_format", "eta_compute_format",
                                                  "launch_by_driver", "attn_decode_by_driver")}
    scalars, per_era = {}, {}
    for p, v in zip(space, x):
        val = float(v) * p.unit
        if p.era:
            per_era.setdefault(p.era, {})[p.field] = val
        elif p.key is None:
            scalars[p.field] = val
        else:
            dicts[p.field][p.key] = val
    # the K/V re-read share (fitted, else the engine's prior) holds in the eras whose attention ran unfused
    share = scalars.pop("kv_reread", prior_profile(prior.name).kv_reread)
    fused = not unfused_attention(prior.name, prior.version) if prior.version else None
    base = replace(prior, bw_cap_gbps=0.0, **dicts, **scalars, flash_attention=fused,
                   kv_reread=share if not fused else 0.0)
    if not prior.version:
        return base
    out = {prior.version: base}
    for era, vals in per_era.items():
        m, c = vals.pop("era_mem", 1.0), vals.pop("era_compute", 1.0)
        vals.setdefault("quant_flops_per_core_cycle", 0.0)    # MMQ on tensor cores: the newest era only
        vals["kv_reread"] = share if unfused_attention(prior.name, era) else 0.0
        vals["flash_attention"] = not unfused_attention(prior.name, era)   # the era's default path
        vals["launch_by_driver"] = {}          # an older era's launches: its own launch_s under every driver
        vals["attn_decode_by_driver"] = {}     # and its decode attention: the newest era's rows measure the loop
        out[era] = replace(base, version=era,
                           eta_mem={k: v * m for k, v in base.eta_mem.items()},
                           bytes_per_core_cycle=base.bytes_per_core_cycle * m,
                           eta_compute={k: v * c for k, v in base.eta_compute.items()},
                           pj_per_flop=base.pj_per_flop / c, **vals)   # less useful work per joule, as per second
    return out


def log_errors(rs: RowSet, prof: EngineProfile) -> np.ndarray:
    return np.log(predict_rows(rs, prof) / rs.measured)


def prior_residuals(space, x) -> np.ndarray:
    """One residual per parameter: its distance from the prior in prior widths, scaled so that one
    prior width costs as much as one row predicted ROBUST_SCALE (10 %) off."""
    out = []
    for p, v in zip(space, x):
        if p.log_prior:
            out.append((math.log(v) - math.log(p.prior)) / p.sigma)
        else:
            width = {"launch_s": SIGMA_LAUNCH_US, "fixed_s": SIGMA_FIXED_MS}.get(p.field, p.sigma)
            out.append((v - p.prior) / width)
    return np.asarray(out) * ROBUST_SCALE


def robust(z: np.ndarray) -> np.ndarray:
    """Soft-L1 residuals: r**2 = 2 f**2 (sqrt(1 + (z/f)**2) - 1), ~z for |z| << f, ~sqrt(2 f |z|) beyond."""
    f = ROBUST_SCALE
    return np.sign(z) * np.sqrt(2 * f * f * (np.sqrt(1 + (z / f) ** 2) - 1))


def loss(rs: RowSet, prof: EngineProfile, mask=None, space=None, x=None) -> float:
    """The fit's objective for a profile on the (masked) rows, plus the prior term when ``space`` is given."""
    z = log_errors(rs, prof)
    if mask is not None:
        z = z[mask]
    total = float(np.sum(robust(z) ** 2))
    if space is not None:
        total += float(np.sum(prior_residuals(space, x) ** 2))
    return total


def fit(rs: RowSet, prior: EngineProfile, mask=None, start=None) -> tuple[EngineProfile, list[Param], np.ndarray]:
    """Least-squares fit of ``prior``'s parameters on the rows of ``rs`` selected by ``mask``. ``start``: {label:
    value} to start from (a held-out refit starts at the full fit, the prior term still pulling toward the prior,
    and stops after HOLDOUT_NFEV steps: it moves from a nearby minimum)."""
    from scipy.optimize import least_squares

    mask = np.ones(len(rs.rows), bool) if mask is None else np.asarray(mask, bool)
    rows = [r for r, m in zip(rs.rows, mask) if m]
    space = param_space(prior, rows)
    lo = np.array([p.lo for p in space])
    hi = np.array([p.hi for p in space])
    x0 = np.array([_clip((start or {}).get(p.label, p.prior), p.lo, p.hi) for p in space])

    def resid(x):
        z = log_errors(rs, make_profile(prior, space, x))[mask]
        return np.concatenate([robust(z), prior_residuals(space, x)])

    best = least_squares(resid, x0, bounds=(lo, hi), x_scale="jac", diff_step=1e-4,
                         max_nfev=HOLDOUT_NFEV if start else 400)
    return make_profile(prior, space, best.x), space, best.x


# ---- reporting -------------------------------------------------------------------------------------


def _stats(errs) -> tuple[int, float, float]:
    a = [abs(e) for e in errs]
    return len(a), percentile(a, 50), percentile(a, 90)


def _fmt(n, med, p90) -> str:
    return f"{'-':>5} {'-':>5}" if not n else f"{med:5.1f} {p90:5.1f}"


def run_engine(engine: str, rows, verbose=True, launch_of: dict | None = None, step_of: dict | None = None) -> dict:
    """Fit one backend on its rows and hold its rows out every way the bands need. ``launch_of``, ``step_of``:
    {backend: launch_s}, {backend: fixed_s} fitted in this run for the backends a driver takes its per-kernel and
    per-step costs from (``fit_engines``)."""
    t0 = time.time()
    newest = (eras_of(rows) or [""])[-1]
    prior = replace(prior_profile(engine), version=newest)
    if newest and not unfused_attention(engine, newest):
        prior = replace(prior, kv_reread=0.0)     # as engine_entry: FlashAttention by default reads K/V once
    pri_prof = prior          # the priors as the LOBO column scores them
    if newest and not unfused_attention(engine, newest):
        # and keeps the scores on chip (attn_prior: 0), also where the newest era has no prefill rows to fit the
        # score traffic on (ROCm's 2025 rows are decode only); older eras fit their own from the unfused prior
        prior = replace(prior, attn_bytes_per_flop=0.0)
    rs = build(rows, launch_of=launch_of, step_of=step_of)
    prof, space, x = fit(rs, prior)
    ins = (predict_rows(rs, prof) / rs.measured - 1) * 100
    pri = (predict_rows(rs, pri_prof) / rs.measured - 1) * 100
    start = {p.label: v for p, v in zip(space, x)}
    fams = sorted({r.family for r in rows})
    raw = prior_profile(engine)      # what a device answers with where the fit does not reach (get_engine's prior)
    held, family_out = arch_family_out(rs, prior, raw, start, prof)
    vendors = sorted({r.hw.vendor for r in rows})
    lovo = np.array(pri, dtype=float)          # one vendor only: without it the backend has its priors
    ven_arr = np.array([r.hw.vendor for r in rows])
    if len(vendors) > 1:
        for ven in vendors:
            m = ven_arr != ven
            p_ho = refit(rs, prior, m, start, prof, raw)
            lovo[~m] = (predict_rows(rs, p_ho)[~m] / rs.measured[~m] - 1) * 100
    moe = [is_moe(r.model) for r in rows]
    loco = leave_condition_out(rs, prior, rows, moe, start, prof, raw)
    pooled, seen = pooled_holdouts(rs, prior, raw, start, prof)
    if verbose:
        print(f"  fitted {engine} on {len(rows)} rows in {time.time() - t0:.1f} s", file=sys.stderr)
    return dict(engine=engine, rows=rows, profile=prof, space=space, x=x, insample=ins, heldout=held,
                prior_err=pri, families=fams, version=prior.version, lovo=lovo, fitted=True, moe=moe, loco=loco,
                pooled=pooled, seen=seen, family_out=family_out, pri_prof=pri_prof,
                # what a device of a family without rows is answered with: the priors on the fit's kernel paths
                prior_alone=(predict_rows(rs, era_blend(raw, prof, 0.0)) / rs.measured - 1) * 100,
                arch_rows=dict(sorted(Counter(arch_family(r.hw) for r in rows).items())),
                vendor_rows=dict(sorted(Counter(vendor_key(r.hw) for r in rows).items())))


def refit(rs: RowSet, prior: EngineProfile, train, start, full=None, pri_prof=None):
    """The backend refitted on the ``train`` rows (its priors where there are none). An era of the full fit ``full``
    that the train rows lack, the newest included, is answered by the priors on that era's kernel paths
    (``pooled_holdout.held_out_eras``)."""
    prof = fit(rs, prior, train, start)[0] if np.any(train) else prior
    if isinstance(full, dict):
        prof = held_out_eras(prof, full, pri_prof, {r.era for r, m in zip(rs.rows, train) if m})
    return prof


def arch_family_out(rs: RowSet, prior: EngineProfile, pri_prof: EngineProfile, start, full):
    """Each architecture family's rows predicted by a refit without them: as the refit stands (``heldout``: the fit
    before pooling applied them the refit) and pooled (their family has no rows: the priors, ``family_out``)."""
    fams = np.array([arch_family(r.hw) for r in rs.rows])
    held, out = np.full(len(fams), np.nan), np.full(len(fams), np.nan)
    for fam in sorted(set(fams)):
        test = fams == fam
        p_ho = refit(rs, prior, ~test, start, full, pri_prof)
        err = pooled_errors(rs, predict_rows, pri_prof, p_ho, ~test, test, ks=(0.0,))
        held[test], out[test] = err["unpooled"][test], err[0.0][test]
    return held, out


def pooled_holdouts(rs: RowSet, prior: EngineProfile, pri_prof: EngineProfile, start, full):
    """{scheme: {k: signed % error}} of the rows held out by source, by device and forward in time
    (tokspeed/calibration/pooled_holdout.py), and {scheme: rows whose family the refit had}."""
    n = len(rs.rows)
    pooled = {s: {k: np.full(n, np.nan) for k in (*POOL_GRID, "unpooled")} for s in SCHEMES}
    seen = {s: np.zeros(n, bool) for s in SCHEMES}
    for scheme, masks in test_masks(rs.rows).items():
        for test in masks:
            p_ho = refit(rs, prior, ~test, start, full, pri_prof)
            err = pooled_errors(rs, predict_rows, pri_prof, p_ho, ~test, test)
            for k, e in err.items():
                pooled[scheme][k][test] = e[test]
            seen[scheme] |= seen_mask(rs, ~test, test)
    return pooled, seen


def leave_condition_out(rs: RowSet, prior: EngineProfile, rows, moe, start=None, full=None, pri_prof=None) -> dict:
    """{term: signed % error of each row held out that way (NaN where not)} for holdout.CONDITIONS: the backend
    refitted without one weight-format group's rows, without the rows deeper than its median context depth, without
    its MoE rows, predicts them (the distance terms of tokspeed/engines/bands.py). Each refit answers an era its
    rows lack with the priors (``refit``), as every other hold-out does."""
    out = {t: np.full(len(rows), np.nan) for t in CONDITIONS}
    groups = np.array([format_group(r.quant) for r in rows])
    ctx = np.array([r.context for r in rows])
    tests = [("unseen_format", groups == g) for g in sorted(set(groups))]
    tests += [("deep_context", ctx > np.median(ctx)), ("moe_unseen", np.array(moe, bool))]
    for term, out_rows in tests:
        if out_rows.any() and not out_rows.all():
            p_ho = refit(rs, prior, ~out_rows, start, full, pri_prof)
            out[term][out_rows] = (predict_rows(rs, p_ho)[out_rows] / rs.measured[out_rows] - 1) * 100
    return out


def newest_profile(res) -> EngineProfile:
    """A fit result's newest-era profile (the values fitted.toml writes at the engine's top level)."""
    prof = res["profile"]
    return prof[res["version"]] if isinstance(prof, dict) else prof


def fit_engines(by_engine: dict, run=run_engine) -> list[dict]:
    """``run`` (the fit of one backend) over the backends with rows, in ``by_engine``'s order. The backends a driver
    takes its per-kernel and per-step costs from (drivers.toml ``kernel_cost_of``: CUDA for Vulkan on NVIDIA) are fitted
    first and their newest era's launch_s and fixed_s, as fitted.toml writes them (``_num``), are handed to the others:
    a refit then depends on the rows alone, not on the fitted.toml an earlier run left (a backend not fitted in this
    run: the tables')."""
    sources = kernel_cost_sources()
    order = sorted((e for e, rows in by_engine.items() if rows), key=lambda e: e not in sources)
    done, launch_of, step_of = {}, {}, {}
    for e in order:
        done[e] = run(e, by_engine[e], launch_of=dict(launch_of), step_of=dict(step_of))
        if e in sources:
            launch_of[e] = float(_num(newest_profile(done[e]).launch_s))
            step_of[e] = float(_num(newest_profile(done[e]).fixed_s))
    return [done[e] for e in by_engine if e in done]


def table(results) -> str:
    head = (f"{'engine':16} {'family':17} {'n_dec':>5} {'dec in-sample':>11} {'dec held-out':>11}  "
            f"{'n_pre':>5} {'pre in-sample':>11} {'pre held-out':>11}")
    sub = f"{'':16} {'':17} {'':>5} {'med':>5} {'p90':>5} {'med':>5} {'p90':>5}  {'':>5} " \
          f"{'med':>5} {'p90':>5} {'med':>5} {'p90':>5}"
    lines = [head, sub, "-" * len(head)]
    for res in results:
        rows = res["rows"]
        groups = [(f, [i for i, r in enumerate(rows) if r.family == f]) for f in res["families"]]
        groups.append(("all", list(range(len(rows)))))
        for fam, idx in groups:
            cells = []
            for kind in ("decode", "prefill"):
                ii = [i for i in idx if rows[i].kind == kind]
                n, m1, q1 = _stats(res["insample"][ii])
                h = [res["heldout"][i] for i in ii if not math.isnan(res["heldout"][i])]
                n2, m2, q2 = _stats(h)
                cells.append(f"{n:5d} {_fmt(n, m1, q1)} {_fmt(n2, m2, q2)}")
            lines.append(f"{res['engine']:16} {fam:17} {cells[0]}  {cells[1]}")
        lines.append("")
    lines.append("abs % error of predicted vs measured tok/s; held-out = the family's rows predicted by a fit "
                 "without that family")
    return "\n".join(lines)


TARGETS = {"decode": (10.0, 25.0), "prefill": (15.0, 35.0)}   # the targets: held-out median / p90 |error| %


def targets(results) -> str:
    """Leave-one-family-out |error| on every llama.cpp row, overall and per family with >= 10 rows,
    against the targets (median, p90) of TARGETS."""
    lines = ["leave-one-family-out |error| on llama.cpp rows vs target (median <= / p90 <=):"]
    for kind, (t50, t90) in TARGETS.items():
        errs = {}
        for res in results:
            if not res["engine"].startswith("llama.cpp"):
                continue
            for r, h in zip(res["rows"], res["heldout"]):
                if r.kind == kind and not math.isnan(h):
                    errs.setdefault("all", []).append(abs(h))
                    errs.setdefault(r.family, []).append(abs(h))
        for fam, e in sorted(errs.items(), key=lambda kv: kv[0] != "all"):
            if len(e) < 10:
                continue
            m, q = percentile(e, 50), percentile(e, 90)
            ok = "ok" if m <= t50 and q <= t90 else "MISSED"
            lines.append(f"  {kind:8} {fam:16} n={len(e):4d}  median {m:5.1f} % (<= {t50:g})  "
                         f"p90 {q:5.1f} % (<= {t90:g})  {ok}")
    return "\n".join(lines)


def band(res, kind, prior_pct: float) -> float:
    """Stored error band of a device whose architecture family is in the fit: the split-conformal COVER % quantile of
    the |error| of the backend's rows held out by source and by device, pooled at the chosen strength
    (tokspeed/calibration/pooled_holdout.py; over every backend's held-out rows where it has fewer than
    MIN_BAND_ROWS); the prior's band where nothing was held out."""
    b = res.get("bands", {}).get((kind, "seen"), float("nan"))
    return prior_pct if math.isnan(b) else b


def _num(v: float) -> str:
    if abs(v) < 1e-9:      # launch_s / fixed_s at their lower bound (optimizer round-off)
        return "0.0"
    s = f"{v:.4g}"
    return s if any(c in s for c in ".e") else s + ".0"


ERA_SCALARS = ("launch_s", "fixed_s", "attn_bytes_per_flop", "kv_reread")   # per older era, with eta_mem, eta_compute
CORE_BOUNDS = ("bytes_per_core_cycle", "quant_flops_per_core_cycle", "pj_per_flop")   # written where the newest era has them


def shared_eta_mem(results, engine: str) -> dict:
    """eta_mem per memory technology fitted for the engine whose kernels ``engine`` compiles (its priors'
    ``kernels_of``), without its default; {} if none or not fitted here."""
    from tokspeed.engines.tables import load_table

    of = load_table("priors.toml").get(engine, {}).get("kernels_of")
    for res in results:
        if res["engine"] == of:
            return {k: v for k, v in newest_profile(res).eta_mem.items() if k != "default"}
    return {}


def fitted_prior_source(source: str) -> str:
    """A prior's source quoted in a fitted entry: its "no calibration rows" is true of the prior alone, and a
    fitted entry has rows."""
    return source.replace("; no calibration rows", "")


FITTED_HEADER = """# Written by scripts/fit_calibration.py from data/validation/calibration.csv and calibration-3.csv: do not
# edit by hand. Overlays priors.toml per engine; `version` is the newest engine era fitted (tokspeed/engines/
# eras.toml), whose values are the engine's top-level ones; `eras.<label>` holds what differs in an older era.
# eta_mem is keyed by memory technology (hbm, gddr, lpddr, ddr). arch_rows / pool_rows: the partial pooling
# toward the priors per architecture family (tokspeed/engines/pooling.py). Error bands: the split-conformal 90 %
# quantile of the |error| held out by source and by device, for a family in the fit (decode_error_pct) and one
# without rows (decode_unseen_pct).
"""


def fitted_toml(results) -> str:
    return dumps({res["engine"]: engine_table(res, results) for res in results}, number=_num, header=FITTED_HEADER)


def engine_table(res, results) -> dict:
    """One engine's fitted.toml table: its newest era's values, the pooling, the bands, and its older eras."""
    prof, p = res["profile"], newest_profile(res)
    rows = res["rows"]
    nd = sum(r.kind == "decode" for r in rows)
    counts = Counter([memory_class(r.hw) for r in rows] + [r.hw.kind for r in rows])
    # an unseen memory technology gets the value fitted for the technology with most rows
    top = max(sorted(k for k in counts if k in p.eta_mem), key=counts.get)
    kinds = [k for k in counts if k in p.eta_compute]
    top_kind = max(sorted(kinds), key=counts.get) if kinds else None
    eta_mem = {**{k: v for k, v in p.eta_mem.items() if k in counts}, "default": p.eta_mem[top]}
    # a backend compiled from another's kernels (priors.toml kernels_of: ROCm from CUDA) keeps that engine's
    # fitted value for a memory technology it has no rows of (HBM Instinct parts), not its GDDR rows' value
    eta_mem = {**shared_eta_mem(results, res["engine"]), **eta_mem}
    eta_compute = {**p.eta_compute, "default": p.eta_compute[top_kind] if top_kind else p.compute_eff("")}
    prior = prior_profile(res["engine"])
    out = {"version": res["version"]} if res["version"] else {}
    out.update(eta_mem=Inline(eta_mem), eta_compute=Inline(eta_compute), eta_format=Inline(p.eta_format),
               eta_compute_format=Inline(p.eta_compute_format), eta_attn=p.eta_attn, eta_matvec=p.eta_matvec,
               attn_bytes_per_flop=p.attn_bytes_per_flop, kv_reread=p.kv_reread,
               gemm_half_tokens=round(p.gemm_half_tokens, 1), eta_kv=p.eta_kv, bw_cap_gbps=0.0,
               launch_s=p.launch_s, fixed_s=p.fixed_s)
    for f in ("launch_by_driver", "attn_decode_by_driver"):
        if getattr(p, f):
            out[f] = Inline(getattr(p, f))
    out.update({k: getattr(p, k) for k in CORE_BOUNDS if getattr(p, k)})
    for kind in ("decode", "prefill"):
        out[f"{kind}_error_pct"] = float(round(band(res, kind, getattr(prior, f"{kind}_error_pct"))))
    # partial pooling toward the priors by architecture family (tokspeed/engines/pooling.py)
    out.update(arch_rows=Inline(res["arch_rows"]), vendor_rows=Inline(res["vendor_rows"]),
               pool_rows=float(res["pool_k"]))
    for kind in ("decode", "prefill"):
        unseen = res["bands"][(kind, "unseen")]
        out[f"{kind}_unseen_pct"] = float(round(unseen if not math.isnan(unseen) else band(res, kind, 0)))
    out["fitted"] = True
    out["source"] = (f"fitted by scripts/fit_calibration.py on {len(rows)} rows of calibration.csv "
                     f"({nd} decode, {len(rows) - nd} prefill; {', '.join(res['families'])}; eras "
                     f"{', '.join(eras_of(rows))}); priors: {fitted_prior_source(prior.source)}")
    eras = {}
    for era, ep in sorted(prof.items()) if isinstance(prof, dict) else []:
        if era == res["version"]:
            continue
        era_mem = {k: ep.eta_mem.get(k, v) for k, v in eta_mem.items() if k != "default"}   # shared: as is
        era_mem["default"] = ep.eta_mem[top]
        c = ep.eta_compute.get("default", 1.0) / p.eta_compute.get("default", 1.0)
        eras[era] = {"eta_mem": Inline(era_mem), "eta_compute": Inline({k: v * c for k, v in eta_compute.items()})}
        # 0 = no bound in that era
        eras[era].update({k: getattr(ep, k) for k in ERA_SCALARS + tuple(b for b in CORE_BOUNDS if getattr(p, b))})
        for f in ("launch_by_driver", "attn_decode_by_driver"):   # an older era: its own launch_s and eta_matvec
            if getattr(p, f):
                eras[era][f] = Inline({})
    if eras:
        out["eras"] = eras
    return out


DOCS = REPO / "docs" / "calibration.md"
FAMILY_BIAS_LEAD = ("Signed median error (predicted / measured - 1, %) per backend and architecture family with 4 "
                    "rows or more: in sample, under the priors alone, held out by source and forward in time "
                    "(\"—\": no row of the family is held out that way). A one-sided held-out column is a bias a band "
                    "must not be widened to cover: a mechanism the model lacks or a prior that is off "
                    "(`tokspeed/calibration/family_bias.py`).")
BANDS = REPO / "tokspeed" / "engines" / "bands.toml"
DOC_START, DOC_END = "<!-- held-out tables: start (scripts/fit_calibration.py --docs) -->", "<!-- held-out tables: end -->"


def write_docs(tables: str) -> None:
    text = DOCS.read_text()
    a, b = text.index(DOC_START), text.index(DOC_END)
    DOCS.write_text(text[:a + len(DOC_START)] + "\n\n" + tables + "\n\n" + text[b:])


def scored_rows(path=None, engines=BACKENDS):
    rows = load_rows(path)
    return rows, {e: [r for r in rows if not r.skip and r.engine == e] for e in engines}


def row_errors(results, k: float) -> list:
    """Per scored row: its id, backend, metric, device, architecture family and source, and its signed % errors: in
    sample, under the priors alone, and held out by source, by device and forward in time (pooled at ``k``; null
    where the scheme does not hold it out), with whether its family had rows in each refit (``seen_*``)."""
    def num(x):
        return None if math.isnan(x) else round(float(x), 4)
    out = []
    for res in results:
        for i, r in enumerate(res["rows"]):
            d = {"id": r.id, "engine": res["engine"], "kind": r.kind, "row_device": r.hw.name,
                 "family": arch_family(r.hw), "row_source": r.source, "insample": num(res["insample"][i]),
                 "priors": num(res["prior_alone"][i])}
            for s in SCHEMES:
                d[s] = num(res["pooled"][s][k][i])
                d[f"seen_{s}"] = bool(res["seen"][s][i])
            out.append(d)
    return out


def dump_path_problem(path: str | None) -> str:
    """Why ``--dump``'s file cannot be written ("" if it can, or none was asked for)."""
    if not path:
        return ""
    p = Path(path)
    if p.is_dir():
        return "is a folder"
    if not p.parent.is_dir():
        return f"no folder {p.parent}"
    if not os.access(p.parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        return "not writable"
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", help="calibration.csv (default: data/validation/calibration.csv)")
    ap.add_argument("--write", action="store_true", help="write tokspeed/engines/fitted.toml")
    ap.add_argument("--engines", nargs="*", default=BACKENDS)
    ap.add_argument("--docs", action="store_true", help="rewrite the held-out tables in docs/calibration.md")
    ap.add_argument("--dump", metavar="FILE", help="write every scored row's in-sample and held-out errors (JSON)")
    args = ap.parse_args(argv)
    bad = dump_path_problem(args.dump)
    if bad:                          # said before the fit's twenty minutes, not after them
        print(f"fit_calibration.py: --dump {args.dump}: {bad}", file=sys.stderr)
        return 2
    t0 = time.time()
    rows, by_engine = scored_rows(args.csv, args.engines)
    skipped = {}
    for r in rows:
        if r.skip:
            skipped[r.skip] = skipped.get(r.skip, 0) + 1
    print(f"{len(rows)} rows read; scored {sum(len(v) for v in by_engine.values())}; skipped: "
          + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items(), key=lambda kv: -kv[1])))
    results = fit_engines(by_engine)
    k = choose_k(results)
    for res in results:          # the share of the memory each row's run takes: the band's edge cell
        res["fill"] = row_fills(res["rows"])
    edge_fill, edge_scores = choose_edge(results, k)
    bands = backend_bands(results, k)
    for res in results:
        res.update(pool_k=k, bands=bands[res["engine"]], cell_bands=band_cells(res, k), band_rows={
            f"{d}_band_rows": sum(len(band_rows(res, kind, k, d)) for kind in ("decode", "prefill"))
            for d in ("seen", "unseen")}, edge_bands=edge_bands(res, k), edge_fill=edge_fill, edge_scores=edge_scores)
    print()
    print(table(results))
    print()
    for res in results:
        pe = np.abs(res["prior_err"])
        ie = np.abs(res["insample"])
        print(f"{res['engine']}: median |error| priors {np.median(pe):.1f} % -> fitted {np.median(ie):.1f} %;  "
              + ", ".join(f"{p.label}={_num(v * p.unit)}" for p, v in zip(res["space"], res["x"])))
    print()
    print(targets(results))
    print()
    llama = band_results(results, rows, band)
    tables = "\n\n".join([pooled_tables(results, k), FAMILY_BIAS_LEAD, family_bias_table(results, k),
                            held_out_tables(llama)])
    print()
    print(tables)
    if args.write:
        FITTED.write_text(fitted_toml(results))
        BANDS.write_text(bands_toml(llama))
        print(f"wrote {FITTED.relative_to(REPO)} and {BANDS.relative_to(REPO)}")
    if args.docs:
        write_docs(tables)
        print(f"wrote the held-out tables into {DOCS.relative_to(REPO)}")
    if args.dump:
        Path(args.dump).write_text(json.dumps(row_errors(results, k), indent=0, sort_keys=True))
        print(f"wrote every row's errors into {args.dump}")
    print(f"total {time.time() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
