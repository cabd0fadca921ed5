"""Partial pooling toward the priors per architecture family (engines/pooling.py) and the held-out machinery that
chooses its strength and builds the bands (calibration/pooled_holdout.py): values computed here by hand."""

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tokspeed.calibration import pooled_holdout as ph
from tokspeed.engines.pooling import arch_family, blend, family_weight, pool_weight, pooled
from tokspeed.engines.profile import EngineProfile, get_engine
from tokspeed.hardware.catalog import get_hardware

ENGINES = Path(__file__).resolve().parents[1] / "tokspeed" / "engines"


def _toml(name):
    with open(ENGINES / name, "rb") as f:
        return tomllib.load(f)


def test_pool_weight_by_hand():
    assert pool_weight(0, 10.0) == 0.0                 # no rows of the family: the priors
    assert pool_weight(10, 10.0) == 0.5
    assert pool_weight(30, 10.0) == 0.75
    assert pool_weight(5, 0.0) == 1.0                  # no pooling: as fitted


def test_blend_by_hand():
    prior = EngineProfile("x", eta_mem={"default": 0.5, "gddr": 0.5}, eta_attn=0.4, launch_s=10e-6, fixed_s=0.0,
                          eta_format={"kquant": 0.9}, quant_flops_per_core_cycle=256.0, kv_reread=0.5,
                          attn_bytes_per_flop=0.03)
    fit = EngineProfile("x", eta_mem={"default": 0.8, "gddr": 0.9}, eta_attn=0.9, launch_s=2e-6, fixed_s=1e-3,
                        eta_format={"kquant": 0.6}, quant_flops_per_core_cycle=0.0, kv_reread=0.0,
                        attn_bytes_per_flop=0.0, fitted=True)
    b = blend(prior, fit, 0.5)
    assert b.eta_mem["gddr"] == pytest.approx(math.sqrt(0.5 * 0.9))       # geometric mean at w = 1/2
    assert b.eta_attn == pytest.approx(math.sqrt(0.4 * 0.9))
    assert b.eta_format["kquant"] == pytest.approx(math.sqrt(0.9 * 0.6))
    assert b.launch_s == pytest.approx(6e-6) and b.fixed_s == pytest.approx(0.5e-3)   # linear
    assert b.quant_flops_per_core_cycle == 0.0          # an era without the MMQ bound keeps none
    assert b.kv_reread == 0.0 and b.attn_bytes_per_flop == 0.0   # the fit's attention where the family has rows
    z = blend(prior, fit, 0.0)
    assert z.kv_reread == 0.0 and z.attn_bytes_per_flop == 0.0   # none: fused attention's prior is none
    assert blend(prior, fit, 0.0).eta_mem["gddr"] == pytest.approx(0.5)
    assert blend(prior, fit, 1.0) is fit


def test_a_family_without_rows_is_answered_by_the_priors():
    entry = {"arch_rows": {"ada": 40}, "pool_rows": 20.0, "decode_unseen_pct": 55.0, "prefill_unseen_pct": 80.0}
    prior = EngineProfile("llama.cpp-vulkan", eta_mem={"default": 0.6}, eta_attn=0.5, decode_error_pct=30.0,
                          source="prior")
    fit = EngineProfile("llama.cpp-vulkan", eta_mem={"default": 0.9}, eta_attn=0.8, decode_error_pct=12.0,
                        fitted=True, source="fit")
    rdna4 = get_hardware("rx-9070-xt")
    assert arch_family(rdna4) == "rdna4" and family_weight(entry, rdna4) == 0.0
    p = pooled(fit, prior, entry, rdna4)
    assert not p.fitted and p.arch_rows == 0 and "no rdna4 rows" in p.source
    assert p.eta_mem["default"] == pytest.approx(0.6) and p.eta_attn == pytest.approx(0.5)
    assert p.decode_error_pct == pytest.approx(55.0)    # the held-out band of unseen families, not the fit's
    ada = get_hardware("rtx-4090")
    q = pooled(fit, prior, entry, ada)                  # w = 40 / (40 + 20) = 2/3
    assert q.fitted and q.arch_rows == 40
    assert q.eta_attn == pytest.approx(0.5 ** (1 / 3) * 0.8 ** (2 / 3))
    assert q.decode_error_pct == pytest.approx(55.0 ** (1 / 3) * 12.0 ** (2 / 3))


def test_per_kernel_and_per_step_costs_pool_by_the_vendors_rows():
    # the costs are the engine's and its driver's: a family with few rows (Blackwell: 4, all prompts) takes them by
    # the weight of the backend's rows on its vendor (NVIDIA: 688), its efficiencies by its own; none without rows
    entry = {"arch_rows": {"ada": 40, "blackwell": 4}, "vendor_rows": {"nvidia": 44}, "pool_rows": 4.0}
    prior = EngineProfile("llama.cpp-cuda", eta_mem={"default": 0.6}, launch_s=4e-6, fixed_s=3e-4, source="prior")
    fit = EngineProfile("llama.cpp-cuda", eta_mem={"default": 0.9}, launch_s=2e-6, fixed_s=1e-4, fitted=True,
                        source="fit")
    p = pooled(fit, prior, entry, get_hardware("rtx-5090"))     # w = 4 / 8 = 1/2; costs 44 / 48
    assert p.eta_mem["default"] == pytest.approx(math.sqrt(0.6 * 0.9))
    assert p.launch_s == pytest.approx(4e-6 * 4 / 48 + 2e-6 * 44 / 48)
    assert p.fixed_s == pytest.approx(3e-4 * 4 / 48 + 1e-4 * 44 / 48)
    none = pooled(fit, prior, entry, get_hardware("rx-7900-xtx"))   # no rdna3 rows, no AMD rows: the priors
    assert none.launch_s == pytest.approx(4e-6) and none.fixed_s == pytest.approx(3e-4)
    old = pooled(fit, prior, {k: v for k, v in entry.items() if k != "vendor_rows"}, get_hardware("rtx-5090"))
    assert old.launch_s == pytest.approx(3e-6)          # a fit written without vendor_rows: the family's weight
    assert blend(prior, fit, 0.0, 1.0).launch_s == pytest.approx(4e-6)   # w = 0 keeps the priors' costs


def test_shipped_fit_pools_by_the_rows_it_lists():
    fitted = _toml("fitted.toml")["llama.cpp-cuda"]
    if "arch_rows" not in fitted:
        pytest.skip("fitted.toml written without pooling")
    hw = get_hardware("rtx-4090")
    n, k = fitted["arch_rows"].get("ada", 0), fitted["pool_rows"]
    w = n / (n + k) if k else 1.0
    prior = _toml("priors.toml")["llama.cpp-cuda"]
    got = get_engine("llama.cpp-cuda", hw)
    assert got.arch_rows == n
    want = prior["eta_kv"] ** (1 - w) * fitted["eta_kv"] ** w
    assert got.eta_kv == pytest.approx(want, rel=1e-9)


def test_shipped_fit_answers_an_unfitted_family_with_its_priors():
    fitted = _toml("fitted.toml")["llama.cpp-vulkan"]
    if "arch_rows" not in fitted:
        pytest.skip("fitted.toml written without pooling")
    hw = get_hardware("rx-7900-xtx")
    assert "rdna3" not in fitted["arch_rows"]
    got = get_engine("llama.cpp-vulkan", hw)
    prior = _toml("priors.toml")["llama.cpp-vulkan"]
    assert not got.fitted and got.arch_rows == 0
    assert got.eta_attn == pytest.approx(prior["eta_attn"], rel=1e-12)
    assert got.decode_error_pct == pytest.approx(fitted["decode_unseen_pct"])


@dataclass
class _Row:
    source: str
    date: str = ""


def test_source_folds_keep_each_source_whole():
    rows = [_Row(s) for s in "aaaaabbbcccdde"]
    folds = ph.source_folds(rows, n_folds=3)
    assert sum(int(f.sum()) for f in folds) == len(rows)
    for f in folds:
        inside = {r.source for r, m in zip(rows, f) if m}
        outside = {r.source for r, m in zip(rows, f) if not m}
        assert not inside & outside
    # dealt largest first to the lightest fold (the first on a tie): a (5) -> 1; b (3) -> 2; c (3) -> 3;
    # d (2) -> 2 (3 rows, tied with 3: the first); e (1) -> 3 (3 rows against 5)
    assert [sorted({r.source for r, m in zip(rows, f) if m}) for f in folds] == [["a"], ["b", "d"], ["c", "e"]]


def test_forward_in_time_scores_the_later_rows():
    rows = [_Row("s", d) for d in ("2024-05", "2025-06", "2025-07", "", "2026-02")]
    (later,) = ph.time_folds(rows, "2025-06")
    assert later.tolist() == [False, False, True, False, True]


def test_conformal_band_by_hand():
    logs = [0.1 * i for i in range(1, 11)]             # |log error| 0.1 ... 1.0
    # rank ceil(11 x 0.9) = 10: the largest, e^1 - 1
    assert ph.conformal(logs, 90) == pytest.approx((math.e - 1) * 100)
    # rank ceil(11 x 0.5) = 6: 0.6
    assert ph.conformal(logs, 50) == pytest.approx((math.exp(0.6) - 1) * 100)


def test_choose_k_takes_the_least_held_out_error():
    errs = {k: np.array([50.0, -40.0]) for k in ph.POOL_GRID}
    errs[20.0] = np.array([5.0, -5.0])
    res = {"pooled": {s: errs for s in ph.SCHEMES}}
    assert ph.choose_k([res]) == 20.0
