"""The edge of a device's memory as a band cell of its own (scripts/fit_calibration.py, engines/bands.py ``edge_band``).

A run that takes nearly all of its devices' memory is where the memory model's estimates (the runtime reserve, the
compute buffers, how a layer split shares the layers) decide whether it fits at all, and a driver that does not fail
an allocation past the memory but pages the excess to host memory (the Linux amdgpu driver under Vulkan; ROCm and
CUDA refuse instead) decodes several times slower: two Radeon AI PRO R9700s under Vulkan RADV decode gpt-oss-120b
at 69 tok/s at a 16K depth and 8.9 at 32K (calibration-3.csv c3-0074 / c3-0076), where the memory model has them at
95 % of the 64 GB. Which side of the edge such a run falls on is beyond the memory model's accuracy, so it is not
predicted; its band is.

Mondrian conformal over one more cell, for decode (EDGE_KINDS: a decode step reads every paged byte once per token; a
prompt reads the weights once per micro-batch of hundreds of tokens, and the R9700 pair's prompts at 32K run at the
speed of the 16K ones): a held-out decode row whose run takes at least ``fill`` of its fullest device's memory (the
memory budget over the capacity, ``memory.memory_fill``, a property of the question, not of the measurement) is
scored in its backend's edge cell and left out of every other cell, band and distance factor. The edge cell's band
is the COVER % quantile of its rows' |log error| (both distances from the fit; with few rows, nearly their largest); a
question at the edge states at least that band and never less than its own cell's. ``fill`` is the EDGE_GRID value with the least
mean interval score (Winkler's at 90 %, log units) over every backend's rows held out by source and by device, each
against the band its question gets (on a tie: none, else the largest share). A backend whose edge rows are no wider
than its other rows keeps no edge cell (``mark_edge``): its questions would never state it.
"""

from __future__ import annotations

import math

import numpy as np

from .evaluate import predicted
from .pooled_holdout import (COVER, _log_abs, backend_bands, band_cells, band_rows, cell_groups, cell_key,
                             conformal)

EDGE_GRID = (None, 0.80, 0.85, 0.90, 0.95)     # the share of the memory where the edge cell starts (None: no cell)
KINDS = ("decode", "prefill")
EDGE_KINDS = ("decode",)                        # the metrics with an edge cell


def row_fills(rows) -> np.ndarray:
    """The share of its devices' memory each calibration row's run takes, as ``predict`` answers it (NaN where the
    answer has no capacity)."""
    return np.array([np.nan if p.band_fill is None else p.band_fill for p in map(predicted, rows)], dtype=float)


def mark_edge(results, fill: float | None, k: float | None = None) -> None:
    """Set each backend's ``edge`` mask: its EDGE_KINDS rows whose run takes at least ``fill`` of the memory (none
    for None). With ``k``, a backend whose edge rows held out at ``k`` are no wider (their COVER % quantile) than its
    other rows keeps none of that kind: a question states the larger of its cell's band and the edge cell's, so a
    narrower edge cell is never stated, and its rows stay in the cells they belong to."""
    for res in results:
        fills = np.nan_to_num(res["fill"], nan=0.0)
        kinds = np.array([r.kind in EDGE_KINDS for r in res["rows"]], bool)
        res["edge"] = np.zeros(len(fills), bool) if fill is None else kinds & (fills >= fill)
        for kind in EDGE_KINDS if k is not None and res["edge"].any() else ():
            xs = band_rows(res, kind, k, "any", edge=True)
            if xs and conformal(xs) <= conformal(band_rows(res, kind, k, "any")):
                res["edge"] &= ~np.array([r.kind == kind for r in res["rows"]], bool)


def edge_bands(res, k: float) -> dict:
    """{kind: (band %, held-out rows)} of the backend's edge cell: the COVER % quantile of its edge rows held out by
    source and by device at either distance (the question's own cell is the floor: ``stated_bands``,
    ``bands.stated_pct``)."""
    out = {}
    for kind in EDGE_KINDS:
        xs = band_rows(res, kind, k, "any", edge=True)
        if xs:
            out[kind] = (conformal(xs), len(xs))
    return out


def stated_bands(res, k: float, bands: dict) -> list[tuple[float, float]]:
    """(|log error|, band %) of every held-out row of the backend (by source and by device) against the band its
    question gets: its cell's at its distance (``band_cells``), else the backend's; at the edge at least the edge
    cell's."""
    cells, edge = band_cells(res, k), edge_bands(res, k)
    at_edge = res.get("edge")
    lookup = {}
    for kind in KINDS:
        for d in ("seen", "unseen"):
            for name, groups in cell_groups(res, kind, k, d).items():
                if (kind, d, name) in cells:
                    lookup.update({(kind, d, g): cells[(kind, d, name)][0] for g in groups})
    out = []
    for s in ("source", "device"):
        err, seen = res["pooled"][s][k], res["seen"][s]
        for i, (r, e, x) in enumerate(zip(res["rows"], err, _log_abs(err))):
            if math.isnan(e):
                continue
            d = "seen" if seen[i] else "unseen"
            band = lookup.get((r.kind, d, cell_key(res, i)), bands[(r.kind, d)])
            if at_edge is not None and at_edge[i] and r.kind in edge:
                band = max(band, edge[r.kind][0])
            out.append((x, band))
    return out


def interval_score(pairs) -> float:
    """Mean Winkler interval score at COVER % in log units of (|log error|, band %) pairs: the width plus 2 / alpha
    times how far a row lies outside."""
    alpha = 1 - COVER / 100
    scores = [2 * math.log1p(b / 100) + (2 / alpha) * max(0.0, x - math.log1p(b / 100)) for x, b in pairs]
    return float(np.mean(scores)) if scores else float("nan")


def choose_edge(results, k: float) -> tuple[float | None, dict]:
    """(fill, {fill: mean interval score}): the EDGE_GRID value whose edge cells give the least mean interval score
    over every backend's held-out rows; ``results`` are left marked with it (``mark_edge``). Each backend needs
    ``fill`` (``row_fills``)."""
    scores = {}
    for fill in EDGE_GRID:
        mark_edge(results, fill, k)
        bands = backend_bands(results, k)
        scores[fill] = interval_score([p for res in results for p in stated_bands(res, k, bands[res["engine"]])])
    # ties: no cell, else the largest share (the fewest questions widened)
    best = min(EDGE_GRID, key=lambda f: (round(scores[f], 9), f is not None, -(f or 0.0)))
    mark_edge(results, best, k)
    return best, scores
