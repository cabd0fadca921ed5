"""Forward in time: rows held out of a refit are answered by the era their build belongs to, at the build month they
ran. An era whose rows were all held out takes its priors (``pooled_holdout.held_out_eras``), and each row runs the
kernels of its own month (``CalibrationRow.month``, ``evaluate.at_row_build``). Values computed here by hand."""

from dataclasses import replace

import numpy as np
import pytest

from tokspeed.calibration import load_rows
from tokspeed.calibration.evaluate import at_row_build, predicted_tok_s
from tokspeed.calibration.fast import build, predict_rows
from tokspeed.calibration.pooled_holdout import held_out_eras
from tokspeed.calibration.rows import row_month
from tokspeed.engines.backends import fa_tile_on_vector
from tokspeed.engines.profile import EngineProfile, get_engine


def _prof(eta, launch_s, version):
    return EngineProfile("llama.cpp-metal", eta_mem={"default": eta, "lpddr": eta}, launch_s=launch_s,
                         version=version, fitted=True)


def test_an_era_without_train_rows_takes_its_priors_the_newest_included():
    prior = EngineProfile("llama.cpp-metal", eta_mem={"default": 0.7, "lpddr": 0.7}, launch_s=3e-6)
    full = {"2024": _prof(0.87, 7e-6, "2024"), "2025": _prof(0.74, 5.5e-6, "2025")}
    refit = {"2024": _prof(0.88, 7.2e-6, "2024"), "2025": _prof(0.82, 3e-6, "2025")}
    out = held_out_eras(refit, full, prior, {"2024"})
    assert out["2024"] is refit["2024"]                       # an era the train rows have: the refit's
    # the newest era, none of whose rows were in the refit: the priors (blend at weight 0), not the 0.82 that the
    # refit's 2024 rows lent it through the era multiplier's prior of 1
    assert out["2025"].eta_mem["lpddr"] == pytest.approx(0.7)
    assert out["2025"].launch_s == pytest.approx(3e-6)
    both = held_out_eras(refit, full, prior, {"2024", "2025"})
    assert both["2025"] is refit["2025"] and both["2024"] is refit["2024"]
    none = held_out_eras(prior, full, prior, set())           # no train rows at all: every era its priors
    assert none["2024"].eta_mem["lpddr"] == pytest.approx(0.7) and none["2024"].launch_s == pytest.approx(3e-6)


def test_row_month_is_the_date_else_the_build_number():
    assert row_month("llama.cpp-rocm", "2025-12", "b7423") == "2025-12"
    # build 1786 between the anchors [1500, 2023-11] and [2000, 2024-01]: 2023-11 + round(2 x 286 / 500 = 1.14)
    assert row_month("llama.cpp-cuda", "", "32d9f7d9 (1786)") == "2023-12"
    # 7000 -> 2025-11, 7948 -> 2026-02: 7474 is 2025-11 + round(3 x 474 / 948 = 1.5) -> 2026-01
    assert row_month("llama.cpp-cuda", "", "7474") == "2026-01"
    assert row_month("llama.cpp-cuda", "", "") == ""
    assert row_month("vllm", "2025-08", "") == ""              # no eras, no month


@pytest.fixture(scope="module")
def rocm_fa_rows():
    """The R9700 (RDNA4, WMMA) prompt rows with -fa 1 of build b7423 (2025-12), and the same rows as if run by a
    build of 2026-06."""
    rows = [r for r in load_rows() if not r.skip and r.engine == "llama.cpp-rocm" and r.kind == "prefill"
            and r.flash_attention and r.hw.arch == "rdna4"]
    assert rows and {r.month for r in rows} == {"2025-12"}
    return rows + [replace(r, month="2026-06") for r in rows]


def test_a_rocm_row_runs_the_flashattention_of_its_build(rocm_fa_rows):
    # HIP_FA_MMA_SINCE = 2026-03: a build of 2025-12 runs fattn-tile on the vector ALUs, one of 2026-06 the MMA
    # kernel; the era's profile alone (no month: today's build) runs the MMA kernel for both
    today = get_engine("llama.cpp-rocm", version="2025")
    for r in rocm_fa_rows:
        assert not fa_tile_on_vector(today, r.hw)
        at = at_row_build(today, r)
        assert at.build_month == r.month and fa_tile_on_vector(at, r.hw) == (r.month == "2025-12")


def test_the_fit_mirror_predicts_each_row_at_its_build(rocm_fa_rows):
    prof = {"2025": get_engine("llama.cpp-rocm", version="2025")}
    fast = predict_rows(build(rocm_fa_rows), prof)
    slow = np.array([predicted_tok_s(r, prof["2025"]) for r in rocm_fa_rows])
    assert np.allclose(fast, slow, rtol=1e-6)
    n = len(rocm_fa_rows) // 2
    # the same prompt: attention on the vector ALUs (2025-12) is slower than on WMMA (2026-06), the matmuls the same
    assert np.all(fast[:n] < fast[n:])
