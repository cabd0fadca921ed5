"""The band split into cells at each distance from the fit (Mondrian conformal: calibration/pooled_holdout.band_cells)
and its use by a prediction (engines/bands.band_cell): every held-out row in one cell (MoE models, each dense
weight-format group; for a family the fit lacks, MoE against dense), each cell its own 90 % quantile, the groups with
few rows pooled, MoE against dense models where the formats leave one cell, a cell of few rows never narrower than
the backend's band, a question in its own cell."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest

from tokspeed.calibration.pooled_holdout import MIN_CELL_ROWS, band_cells, conformal
from tokspeed.engines import bands
from tokspeed.engines.profile import get_engine


@dataclass
class _Row:
    kind: str
    quant: str


def _res(groups: dict, moe: dict | None = None, seen: bool = True) -> dict:
    """A backend's held-out result: ``groups`` {quant: [signed % errors]} of dense prefill rows and ``moe`` {quant:
    [...]} of MoE ones, every row's family seen (or none: ``seen`` False, the priors' answers), held out by source
    only (the device scheme holds none out)."""
    rows, errs, is_moe = [], [], []
    for flag, part in ((False, groups), (True, moe or {})):
        for quant, es in part.items():
            rows += [_Row("prefill", quant)] * len(es)
            errs += es
            is_moe += [flag] * len(es)
    n = len(rows)
    return {"rows": rows, "moe": is_moe,
            "pooled": {"source": {2.0: np.array(errs, float)}, "device": {2.0: np.full(n, np.nan)}},
            "seen": {"source": np.full(n, seen), "device": np.full(n, seen)}}


def test_cells_by_format_group_each_its_own_quantile():
    kq = [10.0] * 25 + [40.0, -40.0]                   # 27 K-quant rows: 25 within 10 %, two 40 % off
    fl = [5.0 * i for i in range(1, 31)]              # 30 F16 rows, 5 .. 150 % too fast
    q8 = [-20.0] * 8                                  # Q8_0 and Q4_0: 8 + 13 rows, pooled into "other"
    leg = [30.0] * 13
    cells = band_cells(_res({"Q4_K_M": kq, "F16": fl, "Q8_0": q8, "Q4_0": leg}), 2.0)
    assert set(cells) == {("prefill", "seen", "kquant"), ("prefill", "seen", "float"), ("prefill", "seen", "other")}
    # by hand: the ceil((n + 1) 0.9)-th smallest band error, as a ratio: K-quants 26th of 27 -> 40 % too fast
    # (|log 1.4|); measured / predicted = 1 / 0.6 for the 40 % too slow row is 66.7 %, the 27th
    assert cells[("prefill", "seen", "kquant")] == (pytest.approx(40.0), 27)
    assert cells[("prefill", "seen", "float")] == (pytest.approx(140.0), 30)       # 28th of 30: 140 % too fast
    # other: 8 x 25 % (1 / 0.8 - 1) and 13 x 30 %: the 20th of 21 is 30 %
    assert cells[("prefill", "seen", "other")] == (pytest.approx(30.0), 21)
    assert conformal([math.log(1.4)] * 3) == pytest.approx(40.0)


def test_no_cells_where_one_group_holds_every_row():
    assert band_cells(_res({"Q4_K_M": [10.0] * 40}), 2.0) == {}
    assert band_cells(_res({"Q4_K_M": [10.0] * 5, "F16": [5.0] * 6}), 2.0) == {}     # 11 rows: no cell has 20


def test_a_rest_of_few_rows_is_never_narrower_than_the_backends_band():
    # 40 K-quant rows 10 % off, 19 F16 rows 5 % off: the F16 rows alone would say +-5 %; with 19 rows (< 20) their
    # cell takes the band of all 59: the 54th smallest (ceil(60 x 0.9)) of 19 x 5 % and 40 x 10 % is 10 %
    cells = band_cells(_res({"Q4_K_M": [10.0] * 40, "F16": [5.0] * (MIN_CELL_ROWS - 1)}), 2.0)
    assert cells[("prefill", "seen", "kquant")] == (pytest.approx(10.0), 40)
    assert cells[("prefill", "seen", "other")] == (pytest.approx(10.0), 19)


def test_moe_models_are_a_cell_of_their_own_whatever_their_format():
    # 25 dense K-quant rows within 10 %, 25 dense F16 rows 20 % off, 22 MoE rows (Q4_K_M and MXFP4) 80 % too fast
    cells = band_cells(_res({"Q4_K_M": [10.0] * 25, "F16": [-20.0] * 25},
                            moe={"Q4_K_M": [80.0] * 12, "MXFP4": [80.0] * 10}), 2.0)
    assert set(cells) == {("prefill", "seen", "kquant"), ("prefill", "seen", "float"), ("prefill", "seen", "moe")}
    assert cells[("prefill", "seen", "moe")] == (pytest.approx(80.0), 22)
    assert cells[("prefill", "seen", "kquant")] == (pytest.approx(10.0), 25)
    assert cells[("prefill", "seen", "float")] == (pytest.approx(25.0), 25)        # 1 / 0.8 - 1


def test_moe_against_dense_where_no_format_has_rows_enough():
    # a Vulkan-sized backend: 32 dense rows of three formats (none with 20: 16 Q4_0 20 % off, 10 Q4_K_M 10 %, 6 BF16
    # 5 %) and 14 MoE rows (12 30 % off, 2 180 %). Dense: the ceil(33 x 0.9) = 30th of 32 is 20 %. MoE, under 20 rows:
    # the wider of its own (ceil(15 x 0.9) = 14th of 14: 180 %) and every row's (the 43rd of 46: 30 %)
    cells = band_cells(_res({"Q4_0": [20.0] * 16, "Q4_K_M": [10.0] * 10, "BF16": [5.0] * 6},
                            moe={"MXFP4": [30.0] * 12 + [180.0] * 2}), 2.0)
    assert set(cells) == {("prefill", "seen", "moe"), ("prefill", "seen", "dense")}
    assert cells[("prefill", "seen", "dense")] == (pytest.approx(20.0), 32)
    assert cells[("prefill", "seen", "moe")] == (pytest.approx(180.0), 14)


def _entry(cells=None, moe=True):
    return {"fitted": True, "formats": ["float", "kquant", "legacy", "q8"], "prefill_seen_pct": 60.0, "moe": moe,
            "prefill_cell_pct": cells or {"kquant": 40.0, "other": 90.0},
            "prefill_cell_rows": {c: 20 for c in cells} if cells else {"kquant": 180, "other": 40}}


def test_a_question_takes_its_formats_cell(monkeypatch):
    prof = replace(get_engine("llama.cpp-cuda"), arch_rows=200)
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: _entry()})
    assert bands.band_cell(prof, "prefill", "kquant")[0] == pytest.approx(40 / 60)
    assert bands.band_cell(prof, "prefill", "legacy")[0] == pytest.approx(90 / 60)     # pooled: "other"
    assert bands.band_cell(prof, "prefill", "mxfp4") == (1.0, "")       # not in the fit: the unseen-format term
    assert bands.band_cell(prof, "decode", "kquant") == (1.0, "")       # no decode cells
    assert bands.stated_pct(prof, "prefill", format_group="kquant") == pytest.approx(prof.prefill_error_pct * 40 / 60)
    # a family without rows answers from the priors with their band: no cell
    assert bands.band_cell(replace(prof, arch_rows=0), "prefill", "kquant") == (1.0, "")


def test_a_moe_question_takes_the_moe_cell_and_a_dense_one_its_format_or_dense(monkeypatch):
    prof = replace(get_engine("llama.cpp-cuda"), arch_rows=200)
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: _entry({"kquant": 30.0, "moe": 120.0, "other": 90.0})})
    assert bands.band_cell(prof, "prefill", "kquant", moe=True)[0] == pytest.approx(120 / 60)
    assert "MoE models: ±120 % over 20 held-out rows" in bands.band_cell(prof, "prefill", "kquant", moe=True)[1]
    assert bands.band_cell(prof, "prefill", "kquant")[0] == pytest.approx(30 / 60)
    assert bands.band_cell(prof, "prefill", "legacy")[0] == pytest.approx(90 / 60)
    assert bands.stated_pct(prof, "prefill", format_group="legacy", moe=True) == pytest.approx(
        prof.prefill_error_pct * 120 / 60)
    # MoE against dense (a backend with few rows of each format): a dense question of any format takes "dense"
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: _entry({"dense": 25.0, "moe": 150.0})})
    assert bands.band_cell(prof, "prefill", "q8")[0] == pytest.approx(25 / 60)
    assert bands.band_cell(prof, "prefill", "float", moe=True)[0] == pytest.approx(150 / 60)
    # MoE rows pooled into "other" with the small formats: a MoE question takes "other"
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: _entry({"kquant": 30.0, "other": 90.0})})
    assert bands.band_cell(prof, "prefill", "kquant", moe=True)[0] == pytest.approx(90 / 60)
    # a fit without MoE rows: no cell, the MoE-unseen term widens the backend's band instead
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: _entry({"kquant": 30.0, "other": 90.0}, moe=False)})
    assert bands.band_cell(prof, "prefill", "kquant", moe=True) == (1.0, "")


def test_an_unseen_familys_band_splits_into_cells_too():
    # the priors' held-out rows (families the refit lacked): 30 dense rows 20 % off (22 Q4_0, 8 Q4_K_M), 25 MoE rows
    # 150 % too fast -- MoE against dense, never by format at this distance (Q4_0's 22 rows would be a cell when
    # seen): dense takes the 28th of 30 (20 %), MoE the 24th of 25 (150 %); the seen distance has no rows
    cells = band_cells(_res({"Q4_0": [20.0] * 22, "Q4_K_M": [-20.0 / 1.2] * 8}, moe={"MXFP4": [150.0] * 25},
                            seen=False), 2.0)
    assert set(cells) == {("prefill", "unseen", "dense"), ("prefill", "unseen", "moe")}
    assert cells[("prefill", "unseen", "dense")] == (pytest.approx(20.0), 30)
    assert cells[("prefill", "unseen", "moe")] == (pytest.approx(150.0), 25)
    # fewer than MIN_BAND_ROWS (10) held-out rows at a distance: its band is every backend's, no cells
    assert band_cells(_res({"Q4_0": [20.0] * 5}, moe={"MXFP4": [150.0] * 4}, seen=False), 2.0) == {}


def test_a_question_on_an_unseen_family_takes_its_cell_of_the_priors_spread(monkeypatch):
    prof = replace(get_engine("llama.cpp-cuda"), arch_rows=0)        # no rows of the device's family: the priors
    entry = _entry() | {"prefill_unseen_pct": 190.0, "prefill_unseen_cell_pct": {"dense": 45.0, "moe": 260.0},
                        "prefill_unseen_cell_rows": {"dense": 36, "moe": 38}}
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: entry})
    ratio, why = bands.band_cell(prof, "prefill", "legacy")
    assert ratio == pytest.approx(45 / 190) and "dense models: ±45 % over 36 held-out rows of families held out" in why
    assert bands.band_cell(prof, "prefill", "kquant", moe=True)[0] == pytest.approx(260 / 190)
    assert bands.stated_pct(prof, "prefill", format_group="legacy") == pytest.approx(prof.prefill_error_pct * 45 / 190)
    # the seen cells stay the seen family's: a device of a fitted family takes the kquant cell, not the unseen ones
    assert bands.band_cell(replace(prof, arch_rows=200), "prefill", "kquant")[0] == pytest.approx(40 / 60)
