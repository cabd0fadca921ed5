"""The seen-family band split by weight-format cell (Mondrian conformal: calibration/pooled_holdout.format_cells) and
its use by a prediction (engines/bands.format_cell): every held-out row in one cell, each cell its own 90 % quantile,
the groups with few rows pooled, a question in its format's cell."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest

from tokspeed.calibration.pooled_holdout import MIN_CELL_ROWS, conformal, format_cells
from tokspeed.engines import bands
from tokspeed.engines.profile import get_engine


@dataclass
class _Row:
    kind: str
    quant: str


def _res(groups: dict) -> dict:
    """A backend's held-out result: ``groups`` {quant: [signed % errors]} of prefill rows, every row's family seen,
    held out by source only (the device scheme holds none out)."""
    rows, errs = [], []
    for quant, es in groups.items():
        rows += [_Row("prefill", quant)] * len(es)
        errs += es
    n = len(rows)
    return {"rows": rows, "pooled": {"source": {2.0: np.array(errs, float)}, "device": {2.0: np.full(n, np.nan)}},
            "seen": {"source": np.ones(n, bool), "device": np.ones(n, bool)}}


def test_cells_by_format_group_each_its_own_quantile():
    kq = [10.0] * 25 + [40.0, -40.0]                   # 27 K-quant rows: 25 within 10 %, two 40 % off
    fl = [5.0 * i for i in range(1, 31)]              # 30 F16 rows, 5 .. 150 % too fast
    q8 = [-20.0] * 8                                  # Q8_0 and Q4_0: 8 + 13 rows, pooled into "other"
    leg = [30.0] * 13
    cells = format_cells(_res({"Q4_K_M": kq, "F16": fl, "Q8_0": q8, "Q4_0": leg}), 2.0)
    assert set(cells) == {("prefill", "kquant"), ("prefill", "float"), ("prefill", "other")}
    # by hand: the ceil((n + 1) 0.9)-th smallest band error, as a ratio: K-quants 26th of 27 -> 40 % too fast
    # (|log 1.4|); measured / predicted = 1 / 0.6 for the 40 % too slow row is 66.7 %, the 27th
    assert cells[("prefill", "kquant")] == (pytest.approx(40.0), 27)
    assert cells[("prefill", "float")] == (pytest.approx(140.0), 30)       # 28th of 30: 140 % too fast
    # other: 8 x 25 % (1 / 0.8 - 1) and 13 x 30 %: the 20th of 21 is 30 %
    assert cells[("prefill", "other")] == (pytest.approx(30.0), 21)
    assert conformal([math.log(1.4)] * 3) == pytest.approx(40.0)


def test_no_cells_where_one_group_holds_every_row_or_the_rest_are_too_few():
    assert format_cells(_res({"Q4_K_M": [10.0] * 40}), 2.0) == {}
    assert format_cells(_res({"Q4_K_M": [10.0] * 40, "F16": [5.0] * (MIN_CELL_ROWS - 1)}), 2.0) == {}


def _entry():
    return {"fitted": True, "formats": ["float", "kquant", "legacy", "q8"], "prefill_seen_pct": 60.0,
            "prefill_format_pct": {"kquant": 40.0, "other": 90.0}, "prefill_format_rows": {"kquant": 180, "other": 40}}


def test_a_question_takes_its_formats_cell(monkeypatch):
    prof = replace(get_engine("llama.cpp-cuda"), arch_rows=200)
    monkeypatch.setattr(bands, "_bands", lambda: {prof.name: _entry()})
    assert bands.format_cell(prof, "prefill", "kquant")[0] == pytest.approx(40 / 60)
    assert bands.format_cell(prof, "prefill", "legacy")[0] == pytest.approx(90 / 60)     # pooled: "other"
    assert bands.format_cell(prof, "prefill", "mxfp4") == (1.0, "")       # not in the fit: the unseen-format term
    assert bands.format_cell(prof, "decode", "kquant") == (1.0, "")       # no decode cells
    assert bands.stated_pct(prof, "prefill", format_group="kquant") == pytest.approx(prof.prefill_error_pct * 40 / 60)
    # a family without rows answers from the priors with their band: no cell
    assert bands.format_cell(replace(prof, arch_rows=0), "prefill", "kquant") == (1.0, "")
