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
from tokspeed.predict import predict

K = 0.0


def _mem(total, capacity):
    return Memory(weights_bytes=total, kv_bytes=0.0, activations_bytes=0.0, overhead_bytes=0.0, total_bytes=total,
                  capacity_bytes=capacity, fits=total <= capacity, max_context=0, max_batch=0)


def test_memory_fill_is_the_fullest_device_and_none_with_layers_on_the_host():
    assert memory_fill(_mem(9e9, 10e9)) == pytest.approx(0.9)
    # a layer split: 17.4 of 20 GB over both devices (0.87) but the first device 9.9 of 10 (0.99)
    assert memory_fill(_mem(17.4e9, 20e9), [(9.9e9, 10e9), (7.5e9, 10e9)]) == pytest.approx(0.99)
    assert memory_fill(_mem(9e9, 10e9), on_host=True) is None           # an offload fills the GPU on purpose
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
    assert fill == 0.95 and list(res["edge"]) == [False] * 60 + [True] * 3       # the largest of the tied shares
    assert interval_score([(math.log(2), 100.0)]) == pytest.approx(2 * math.log(2))


def test_the_share_itself_is_at_the_edge():
    res = _result(edge_fill=0.9)
    mark_edge([res], 0.9)
    assert list(res["edge"]) == [False] * 60 + [True] * 3


def test_no_edge_cell_where_its_rows_are_no_wider():
    res = _result()
    res["pooled"]["source"][K][60:] = res["pooled"]["device"][K][60:] = 5.0     # the edge rows 5 % off, the rest 10
    mark_edge([res], 0.9)
    assert res["edge"].sum() == 3                   # by the share alone
    mark_edge([res], 0.9, K)                        # their band (+-5 %) is no wider than the others' (+-10 %)
    assert not res["edge"].any() and edge_bands(res, K) == {}


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
    assert pct == 518.0 and why.startswith("the run takes 95 % of its fullest device's memory, 90 % or more: ±518 % "
                                           "over 12 held-out entries")
    assert bands.edge_band(prof, "decode", 0.9) is not None                       # the share itself is at the edge
    narrow = NS(name="llama.cpp-vulkan", fitted=True, arch_rows=3, decode_error_pct=600.0, source="fitted")
    assert bands.stated_pct(narrow, "decode", fill=0.95) == pytest.approx(600.0)   # never narrower than its own
    mine = NS(name="llama.cpp-vulkan", fitted=True, decode_error_pct=20.0, source="this machine's calibration")
    assert bands.edge_band(mine, "decode", 0.99) is None          # a machine's own calibration keeps its band


def test_no_edge_without_a_share_in_the_table(table):
    table["edge"] = {"fill": 0.0}
    prof = NS(name="llama.cpp-vulkan", fitted=True, decode_error_pct=40.0, source="fitted")
    assert bands.edge_band(prof, "decode", 0.99) is None


def test_the_grid_keeps_none_first():
    assert memory_edge.EDGE_GRID[0] is None and sorted(memory_edge.EDGE_GRID[1:]) == list(memory_edge.EDGE_GRID[1:])


def test_a_prediction_at_the_edge_states_the_edge_band(monkeypatch):
    real = bands._bands()
    data = dict(real, edge={"fill": 0.9})
    data["llama.cpp-vulkan"] = dict(real["llama.cpp-vulkan"], decode_edge_pct=1000.0, decode_edge_rows=6)
    monkeypatch.setattr(bands, "_bands", lambda: data)
    # gpt-oss-20b MXFP4 on a 12 GB Arc B580: 12.5 of 12.9 GB by the budget (97 %)
    p = predict("gpt-oss-20b", "arc-b580", engine="llama.cpp-vulkan", prompt=512, gen=128)
    assert p.band_fill == pytest.approx(p.memory.total_bytes / p.memory.capacity_bytes) and p.band_fill > 0.95
    assert p.decode.tok_s_low == pytest.approx(p.decode.tok_s / 11)         # +-1000 %: tok/s / (1 + 10)
    assert p.prefill.tok_s_low > p.prefill.tok_s / 11                        # a prompt has no edge cell
    auto = predict("gpt-oss-20b", "arc-b580", engine="llama.cpp-vulkan", prompt=512, gen=128, offload="auto")
    assert auto.layout.gpu_layers == auto.spec.n_layers + 1                  # every layer on the GPU: still the edge
    assert auto.decode.tok_s_low == pytest.approx(auto.decode.tok_s / 11)
    basis = bands.prediction_basis(p)
    assert basis["decode_pct"] == pytest.approx(1000.0) and basis["decode_edge"]["pct"] == 1000.0
    small = predict("llama-2-7b", "arc-b580", quant="Q4_0", engine="llama.cpp-vulkan", prompt=512, gen=128)
    assert small.band_fill < 0.9 and small.decode.tok_s_low > small.decode.tok_s / 11
    assert bands.prediction_basis(small)["decode_edge"] is None
