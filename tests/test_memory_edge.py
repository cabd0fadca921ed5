"""The edge-of-memory band cell (tokspeed/calibration/memory_edge.py, engines/bands.py ``edge_band``): the share of
the memory a run takes, the edge cell's conformal band, the interval score that chooses where the cell starts, and
the band a question at the edge states; every figure computed by hand from made-up errors."""

import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from tokspeed.calibration import memory_edge
from tokspeed.calibration.memory_edge import choose_edge, edge_bands, interval_score, mark_edge
from tokspeed.calibration.pooled_holdout import band_rows
from tokspeed.engines import bands
from tokspeed.memory import Memory, memory_fill

K = 0.0


def _mem(total, capacity):
    return Memory(weights_bytes=total, kv_bytes=0.0, activations_bytes=0.0, overhead_bytes=0.0, total_bytes=total,
                  capacity_bytes=capacity, fits=total <= capacity, max_context=0, max_batch=0)


def test_memory_fill_is_total_over_capacity_and_none_for_an_offload():
    assert memory_fill(_mem(9e9, 10e9)) == pytest.approx(0.9)
    assert memory_fill(_mem(9e9, 10e9), NS(offload="none")) == pytest.approx(0.9)
    assert memory_fill(_mem(9e9, 10e9), NS(offload="layers")) is None     # fills the GPU to the edge on purpose
    assert memory_fill(_mem(9e9, 0.0)) is None                           # capacity unknown


def _result(edge_fill=0.97):
    """60 dense Q4_0 decode rows 10 % off, held out by source and by device alike (120 entries), and 3 rows at the
    edge of memory +100 %, +500 %, -50 % off (6 entries)."""
    errs = [10.0] * 60 + [100.0, 500.0, -50.0]
    rows = [NS(kind="decode", quant="Q4_0") for _ in errs]
    fills = np.array([0.5] * 60 + [edge_fill] * 3)
    err = np.array(errs)
    seen = np.ones(len(errs), bool)
    return {"engine": "llama.cpp-vulkan", "rows": rows, "moe": [False] * len(errs), "fill": fills,
            "pooled": {"source": {K: err}, "device": {K: err}}, "seen": {"source": seen, "device": seen}}


def test_the_edge_cell_band_and_its_rows_left_out_of_the_others():
    res = _result()
    mark_edge([res], 0.9)
    assert band_rows(res, "decode", K, "seen") == pytest.approx([math.log(1.1)] * 120)
    # edge entries |log|: ln 2 (+100 %), ln 6 (+500 %), ln 2 (-50 %), twice; their 90 % quantile is the
    # ceil(7 x 0.9) = 7th smallest, capped at the 6th (the last): ln 6 = +500 %
    band, n = edge_bands(res, K)["decode"]
    assert n == 6 and band == pytest.approx(500.0)


def test_a_prompt_has_no_edge_cell():
    res = _result()
    for r in res["rows"]:
        r.kind = "prefill"           # a prompt reads the weights once per micro-batch: paging costs it little
    mark_edge([res], 0.9)
    assert not res["edge"].any() and edge_bands(res, K) == {}


def test_choose_edge_by_the_interval_score():
    res = _result()
    fill, scores = choose_edge([res], K)
    # no edge cell: one band over all 126 entries, the ceil(127 x 0.9) = 115th smallest = ln 1.1 (+10 %); the
    # Winkler score at 90 % is 2 ln 1.1 + 20 x (how far outside) per entry: 4 entries ln 2 and 2 entries ln 6 outside
    none = (126 * 2 * math.log(1.1) + 20 * (4 * math.log(2 / 1.1) + 2 * math.log(6 / 1.1))) / 126
    # an edge cell: the 120 other entries +-10 % (none outside), the 6 at the edge +-500 % (none outside)
    edge = (120 * 2 * math.log(1.1) + 6 * 2 * math.log(6)) / 126
    assert scores[None] == pytest.approx(none)
    assert all(scores[f] == pytest.approx(edge) for f in (0.80, 0.85, 0.90, 0.95))
    assert fill == 0.80 and list(res["edge"]) == [False] * 60 + [True] * 3       # the first of the tied shares
    assert interval_score([(math.log(2), 100.0)]) == pytest.approx(2 * math.log(2))


def test_no_edge_cell_where_it_does_not_score_better():
    res = _result(edge_fill=0.5)          # every row at half the memory: no share puts any row in an edge cell
    fill, scores = choose_edge([res], K)
    assert fill is None and not res["edge"].any()
    assert len(set(round(v, 9) for v in scores.values())) == 1


@pytest.fixture
def table(monkeypatch):
    data = {"edge": {"fill": 0.9}, "llama.cpp-vulkan": {"decode_edge_pct": 518.0, "decode_edge_rows": 12}}
    monkeypatch.setattr(bands, "_bands", lambda: data)
    return data


def test_a_question_at_the_edge_states_at_least_the_edge_band(table):
    prof = NS(name="llama.cpp-vulkan", fitted=True, arch_rows=3, decode_error_pct=40.0, prefill_error_pct=60.0,
              source="fitted")
    assert bands.stated_pct(prof, "decode", fill=0.95) == pytest.approx(518.0)
    assert bands.stated_pct(prof, "decode", fill=0.85) == pytest.approx(40.0)       # below the edge
    assert bands.stated_pct(prof, "decode", fill=None) == pytest.approx(40.0)       # an offload, no capacity
    assert bands.stated_pct(prof, "prefill", fill=0.95) == pytest.approx(60.0)      # no prefill edge rows
    pct, why = bands.edge_band(prof, "decode", 0.95)
    assert pct == 518.0 and why.startswith("the run takes 95 % of its devices' memory, 90 % or more: 12 held-out rows")
    mine = NS(name="llama.cpp-vulkan", fitted=True, decode_error_pct=20.0, source="this machine's calibration")
    assert bands.edge_band(mine, "decode", 0.99) is None          # a machine's own calibration keeps its band


def test_no_edge_without_a_share_in_the_table(table):
    table["edge"] = {"fill": 0.0}
    prof = NS(name="llama.cpp-vulkan", fitted=True, decode_error_pct=40.0, source="fitted")
    assert bands.edge_band(prof, "decode", 0.99) is None


def test_the_grid_keeps_none_first():
    assert memory_edge.EDGE_GRID[0] is None and sorted(memory_edge.EDGE_GRID[1:]) == list(memory_edge.EDGE_GRID[1:])
