"""Held-out errors of the partially pooled fit (``tokspeed.engines.pooling``), the pooling strength they choose, the
bands they give and their tables (scripts/fit_calibration.py).

Three ways of holding rows out, each a list of test masks over one backend's rows; the backend is refitted on the
other rows and the test rows are predicted as a user would get them, pooled toward the priors by the rows their own
architecture family has in that refit (none: the priors):

- ``source``: group k-fold over the ``source`` column (SOURCE_FOLDS folds, sources dealt largest first to the fold
  with the fewest rows);
- ``device``: group k-fold over the devices (DEVICE_FOLDS folds; a device's family keeps the rows of its devices in
  other folds);
- ``time``: forward in time, the fit on the rows measured up to FORWARD_CUTOFF, scored on the later rows.

The pooling strength ``k`` (``w = n / (n + k)``) is the one of POOL_GRID with the least mean |log error| over the
rows held out by source and by device, pooled over the backends. ``unpooled`` is the refit applied as it stands to
every device (w = 1, also for a family without rows): the fit before pooling.
"""

from __future__ import annotations

import math

import numpy as np

from ..engines.bands import CELL_LABEL, DENSE, MOE, OTHER
from ..engines.pooling import arch_family, blend, pool_weight, vendor_key
from ..quant.format_key import format_group
from ..stats import percentile

SOURCE_FOLDS = 5
DEVICE_FOLDS = 8                     # devices held out in 8 groups: 24 one-by-one refits of CUDA cost 3x the time
FORWARD_CUTOFF = "2025-06"          # fit on rows up to this month, score the later ones
POOL_GRID = (0.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0)
SCHEMES = ("source", "device", "time")
COVER = 90                           # the quantile a band covers (conformal: of held-out |log error|)
MIN_BAND_ROWS = 10                   # fewer held-out rows of a backend x metric x distance: the pooled band
MIN_CELL_ROWS = 20                   # held-out rows a cell (a weight format, MoE) needs for a band of its own


def group_folds(groups, n_folds: int) -> list[np.ndarray]:
    """Test masks of a group k-fold (deterministic: the largest group first, to the fold with the fewest rows)."""
    count = {}
    for g in groups:
        count[g] = count.get(g, 0) + 1
    folds = [[] for _ in range(min(n_folds, len(count)))]
    for g in sorted(count, key=lambda s: (-count[s], s)):
        min(folds, key=lambda f: (sum(count[s] for s in f), len(f))).append(g)
    arr = np.array(groups)
    return [np.isin(arr, f) for f in folds if f]


def source_folds(rows, n_folds: int = SOURCE_FOLDS) -> list[np.ndarray]:
    """Test masks of a group k-fold over the rows' sources."""
    return group_folds([r.source for r in rows], n_folds)


def device_folds(rows, n_folds: int = DEVICE_FOLDS) -> list[np.ndarray]:
    """Test masks of a group k-fold over the rows' devices: every device's rows predicted by a fit without that
    device (and without the others of its fold)."""
    return group_folds([r.hw.name for r in rows], n_folds)


def time_folds(rows, cutoff: str = FORWARD_CUTOFF) -> list[np.ndarray]:
    later = np.array([bool(r.date) and r.date > cutoff for r in rows])
    return [later] if later.any() else []


def test_masks(rows) -> dict:
    return {"source": source_folds(rows), "device": device_folds(rows), "time": time_folds(rows)}


def era_blend(prior, prof, w, w_cost=None):
    return {e: blend(prior, p, w, w_cost) for e, p in prof.items()} if isinstance(prof, dict) \
        else blend(prior, prof, w, w_cost)


def held_out_eras(refitted, full: dict, prior, train_eras) -> dict:
    """{era: profile} answering rows held out of a refit: ``refitted`` (the backend fitted on the train rows: one
    profile, or {era: profile}) for each era the train rows have (``train_eras``), and for every other era of the
    full fit ``full`` its priors on that era's kernel paths (``pooling.blend`` at weight 0). The newest era counts
    like the others: its values are the fit's only where rows of that era were in it. An era begins with a kernel
    change (``tokspeed/engines/eras.toml``); a refit without its rows would carry it the older eras' efficiencies
    through the era multipliers' prior of 1 (no change), which is a claim about the kernels no row made."""
    own = refitted if isinstance(refitted, dict) else {}
    return {**{e: blend(prior, p, 0.0) for e, p in full.items()},
            **{e: p for e, p in own.items() if e in train_eras}}


def pooled_errors(rs, predict_rows, prior, prof, train, test, ks=POOL_GRID) -> dict:
    """{k: signed % error of the ``test`` rows (NaN elsewhere)} for the fit ``prof`` (trained on ``train``), pooled
    toward ``prior`` per architecture family at each ``k`` (the per-kernel and per-step costs per vendor, as
    ``pooling.pooled`` answers); key ``"unpooled"``: ``prof`` as it stands."""
    fams = np.array([arch_family(r.hw) for r in rs.rows])
    vendors = np.array([vendor_key(r.hw) for r in rs.rows])
    out = {k: np.full(len(fams), np.nan) for k in (*ks, "unpooled")}
    raw = predict_rows(rs, prof)
    out["unpooled"][test] = (raw[test] / rs.measured[test] - 1) * 100
    cache = {}
    for fam, vendor in sorted(set(zip(fams[test], vendors[test]))):
        rows = test & (fams == fam) & (vendors == vendor)
        n, nv = int(np.sum(train & (fams == fam))), int(np.sum(train & (vendors == vendor)))
        for k in ks:
            w, wc = pool_weight(n, k), pool_weight(nv, k)
            if (w, wc) not in cache:
                cache[(w, wc)] = raw if w >= 1.0 and wc >= 1.0 else predict_rows(rs, era_blend(prior, prof, w, wc))
            out[k][rows] = (cache[(w, wc)][rows] / rs.measured[rows] - 1) * 100
    return out


def seen_mask(rs, train, test) -> np.ndarray:
    """Test rows whose architecture family has rows in ``train`` (the fit moves them; else they get the prior)."""
    fams = np.array([arch_family(r.hw) for r in rs.rows])
    seen = set(fams[train])
    return test & np.isin(fams, sorted(seen))


def _log_abs(err_pct) -> np.ndarray:
    return np.abs(np.log1p(np.asarray(err_pct, float) / 100))


def choose_k(results) -> float:
    """The POOL_GRID strength with the least mean |log error| over every backend's rows held out by source and by
    device (ties: the larger k, nearer the priors)."""
    best = None
    for k in POOL_GRID:
        errs = np.concatenate([_log_abs(res["pooled"][s][k]) for res in results for s in ("source", "device")])
        score = float(np.nanmean(errs))
        if best is None or score <= best[0] + 1e-12:
            best = (score, k)
    return best[1]


def conformal(abs_log: list, cover: float = COVER) -> float:
    """The band (%, low end = prediction / (1 + band)) covering ``cover`` % of held-out rows: the
    ceil((n + 1) q)-th smallest |log error| (split-conformal), as a ratio."""
    xs = sorted(abs_log)
    if not xs:
        return float("nan")
    rank = min(len(xs), math.ceil((len(xs) + 1) * cover / 100))
    return (math.exp(xs[rank - 1]) - 1) * 100


def cell_key(res, i: int) -> str:
    """The cell row ``i`` of a backend's result falls in: ``MOE`` for a mixture-of-experts model (its expert dispatch
    and routed reads are kernels of their own, whatever the format), else its weight format's group."""
    moe = res.get("moe")
    return MOE if moe is not None and moe[i] else format_group(res["rows"][i].quant)


def band_rows(res, kind: str, k: float, distance: str, group=None, edge: bool = False) -> list:
    """|log error| of the backend's ``kind`` rows held out by source and by device at strength ``k``, whose family
    was ``seen`` in the refit (or ``unseen``: the priors, or ``any``); ``group``: only those whose cell (``cell_key``:
    MoE, else the weight format's group) is in it; ``edge``: the rows at the edge of their devices' memory
    (``res["edge"]``, calibration/memory_edge.py) instead of the others."""
    at_edge = res.get("edge")
    out = []
    for s in ("source", "device"):
        err, seen = res["pooled"][s][k], res["seen"][s]
        pick = seen if distance == "seen" else ~seen if distance == "unseen" else np.ones(len(seen), bool)
        out += [x for i, (r, e, p, x) in enumerate(zip(res["rows"], err, pick, _log_abs(err)))
                if r.kind == kind and p and not math.isnan(e) and (group is None or cell_key(res, i) in group)
                and bool(at_edge is not None and at_edge[i]) == edge]
    return out


def cell_groups(res, kind: str, k: float, distance: str = "seen") -> dict:
    """{cell: cell keys} of the backend's ``kind`` rows held out at strength ``k`` at ``distance``. Their family in
    the refit (``seen``): MoE models and each dense weight-format group with MIN_CELL_ROWS held-out rows a cell of
    their own, the rest pooled (``OTHER``); where that leaves one cell, MoE models against dense ones (a backend with
    few rows of each format). A family the refit lacked (``unseen``: the priors, fitted per format nowhere, and a
    few devices' rows): MoE models against dense ones. {} where neither splits the rows (the backend's band is that
    of them all)."""
    keys = sorted({cell_key(res, i) for i, r in enumerate(res["rows"]) if r.kind == kind})
    count = {g: len(band_rows(res, kind, k, distance, {g})) for g in keys}
    cells = {g: {g} for g in keys if count[g] >= MIN_CELL_ROWS} if distance == "seen" else {}
    rest = {g for g in keys if g not in cells and count[g]}
    if cells and rest:
        cells[OTHER] = rest
    if len(cells) > 1:
        return cells
    dense = {g for g in keys if g != MOE and count[g]}
    if count.get(MOE) and dense and max(count[MOE], sum(count[g] for g in dense)) >= MIN_CELL_ROWS:
        return {MOE: {MOE}, DENSE: dense}
    return {}


def band_cells(res, k: float) -> dict:
    """{(kind, distance, cell): (band %, held-out rows)}: the backend's band at each distance (its family in the fit,
    or unseen: the priors) split into ``cell_groups`` (Mondrian conformal: each held-out row in one cell, each cell
    its own COVER % quantile); a cell of fewer than MIN_CELL_ROWS rows never narrower than the backend's band over
    them all (few rows: the wider of the two). A distance with fewer than MIN_BAND_ROWS held-out rows of the backend
    has no cells (its band is every backend's). A question in no cell takes the backend's band."""
    out = {}
    for kind in ("decode", "prefill"):
        for distance in ("seen", "unseen"):
            rows = band_rows(res, kind, k, distance)
            if len(rows) < MIN_BAND_ROWS:
                continue
            everything = conformal(rows)
            for name, groups in cell_groups(res, kind, k, distance).items():
                xs = band_rows(res, kind, k, distance, groups)
                out[(kind, distance, name)] = (conformal(xs) if len(xs) >= MIN_CELL_ROWS
                                               else max(conformal(xs), everything), len(xs))
    return out


def backend_bands(results, k: float) -> dict:
    """{engine: {(kind, distance): band %}}: conformal over the engine's own held-out rows where it has
    MIN_BAND_ROWS of them, else over every backend's."""
    pooled = {(kind, d): [x for res in results for x in band_rows(res, kind, k, d)]
              for kind in ("decode", "prefill") for d in ("seen", "unseen")}
    out = {}
    for res in results:
        own = {}
        for key in pooled:
            xs = band_rows(res, key[0], k, key[1])
            own[key] = conformal(xs if len(xs) >= MIN_BAND_ROWS else pooled[key])
        out[res["engine"]] = own
    return out


# ---- tables ------------------------------------------------------------------------------------------------------


def _mp(errs) -> str:
    a = [abs(e) for e in errs if not math.isnan(e)]
    return "-" if not a else f"{percentile(a, 50):.1f} / {percentile(a, 90):.1f}"


def heldout_table(results, k: float) -> str:
    """Markdown: per backend, metric and way of holding out: rows, median / p90 |error| % of the priors, of the fit
    unpooled (as before pooling) and pooled at ``k``."""
    lines = ["| backend | metric | held out by | rows | priors med / p90 | fit unpooled | fit pooled |",
             "|---|---|---|---|---|---|---|"]
    for res in results + [None]:
        group = results if res is None else [res]
        name = "all" if res is None else res["engine"]
        for kind in ("decode", "prefill"):
            for s in SCHEMES:
                pick = [(r, i, g) for g in group for i, r in enumerate(g["rows"]) if r.kind == kind
                        and not math.isnan(g["pooled"][s][k][i])]
                if not pick:
                    continue
                col = lambda key: [g["pooled"][s][key][i] if key != "prior" else g["prior_alone"][i]   # noqa: E731
                                   for _, i, g in pick]
                lines.append(f"| {name} | {kind} | {s} | {len(pick)} | {_mp(col('prior'))} | {_mp(col('unpooled'))} "
                             f"| {_mp(col(k))} |")
    return "\n".join(lines)


def device_check(results, k: float) -> tuple[str, int]:
    """Markdown: per backend and device, median |error| % of the priors and of the fit without the device's own
    architecture family (pooled: its family has no rows, so the priors); and the number of devices whose error grew.
    Also the fit held out by device (its family's other devices' rows pooled in), for comparison."""
    lines = ["| backend | device | family | rows | priors | without its family | held out by device |",
             "|---|---|---|---|---|---|---|"]
    worse = 0
    for res in results:
        names = sorted({r.hw.name for r in res["rows"]})
        for d in names:
            idx = [i for i, r in enumerate(res["rows"]) if r.hw.name == d]
            pri = [abs(res["prior_alone"][i]) for i in idx]
            fam = [abs(res["family_out"][i]) for i in idx]
            dev = [abs(res["pooled"]["device"][k][i]) for i in idx]
            grew = percentile(fam, 50) > percentile(pri, 50) * (1 + 1e-6)
            worse += grew
            lines.append(f"| {res['engine']} | {d} | {arch_family(res['rows'][idx[0]].hw)} | {len(idx)} | "
                         f"{percentile(pri, 50):.1f} | {percentile(fam, 50):.1f}{' (worse)' if grew else ''} | "
                         f"{percentile(dev, 50):.1f} |")
    return "\n".join(lines), worse


def band_table(results, k: float, bands: dict) -> str:
    """Markdown: per backend and metric, the band for a device whose family is in the fit and for one whose family
    is not, each with its coverage of the held-out rows (nested: the band from the other backends' rows where the
    backend has too few), median width high / low and the interval score (Winkler, at 90 %, in units of log)."""
    lines = ["| backend | metric | distance | held-out rows | band | in band | median width (high / low) | "
             "interval score |", "|---|---|---|---|---|---|---|---|"]
    for res in results:
        for kind in ("decode", "prefill"):
            for d in ("seen", "unseen"):
                xs = band_rows(res, kind, k, d)
                if xs:
                    lines.append(_band_line(res["engine"], kind, "family in the fit" if d == "seen" else
                                            "family unseen", xs, bands[res["engine"]][(kind, d)]))
            cells = res.get("cell_bands") or {}      # the fit's (band_cells); none: no cell rows
            for d, where in (("seen", "in the fit"), ("unseen", "unseen")):
                for c, groups in sorted(cell_groups(res, kind, k, d).items() if cells else ()):
                    if (kind, d, c) not in cells:
                        continue
                    xs = band_rows(res, kind, k, d, groups)
                    lines.append(_band_line(res["engine"], kind, f"{where}, {CELL_LABEL.get(c, c + ' weights')}",
                                            xs, cells[(kind, d, c)][0]))
            edge = (res.get("edge_bands") or {}).get(kind) if res.get("edge_fill") else None
            if edge:                 # calibration/memory_edge.py: its rows are in no other line
                where = f"at the edge of memory (≥ {100 * res['edge_fill']:.0f} %)"
                lines.append(_band_line(res["engine"], kind, where, band_rows(res, kind, k, "any", edge=True), edge[0]))
    return "\n".join(lines)


def _band_line(engine: str, kind: str, where: str, xs: list, b: float) -> str:
    """A row of ``band_table``: the held-out |log errors| ``xs`` against the band ``b`` (%)."""
    alpha = 1 - COVER / 100
    half = math.log1p(b / 100)
    inside = sum(x <= half for x in xs)
    score = sum(2 * half + (2 / alpha) * max(0.0, x - half) for x in xs) / len(xs)
    return (f"| {engine} | {kind} | {where} | {len(xs)} | ±{b:.0f} % | {100 * inside / len(xs):.0f} % | "
            f"×{(1 + b / 100) ** 2:.2f} | {score:.2f} |")


def _edge_choice(results) -> str:
    """The sentence saying where the edge-of-memory cell starts and the interval scores that chose it."""
    scores = next((res["edge_scores"] for res in results if res.get("edge_scores")), None)
    if not scores:
        return ""
    fill = results[0].get("edge_fill")
    shown = ", ".join(f"{'none' if f is None else f'{100 * f:.0f} %'} {v:.4f}" for f, v in scores.items())
    return (f" The edge cell starts at {'no share (none)' if fill is None else f'{100 * fill:.0f} % of the memory'}"
            f" (mean interval score over every held-out row: {shown}).")


def pooled_tables(results, k: float) -> str:
    """The held-out tables of the pooled fit (markdown, for docs/calibration.md and the console)."""
    check, worse = device_check(results, k)
    return "\n".join([
        f"Partial pooling toward the priors per architecture family: w = n / (n + {k:g}) (k chosen among "
        f"{', '.join(f'{g:g}' for g in POOL_GRID)} by the least mean |log error| held out by source and by device).",
        "", "Held-out |error| % (median / p90): by source (group k-fold over the `source` column), by device (group "
        f"{DEVICE_FOLDS}-fold over the devices), forward in time (fit on rows up to {FORWARD_CUTOFF}, score the later rows); the priors "
        "alone, the refit applied to every device as it stands (no pooling) and pooled.", "",
        heldout_table(results, k), "",
        f"No worse than the priors: each device's median |error| with its own architecture family's rows removed "
        f"from the fit, against the priors alone. Devices whose error grew: {worse}.", "",
        check, "",
        "Bands: the split-conformal 90 % quantile of the held-out |log error| (by source and by device) per backend, "
        "metric and distance (the device's family in the fit, or not: its priors); fewer than 10 held-out rows take "
        "every backend's. The rows at each distance are split into cells: MoE models and each dense weight-format "
        f"group with {MIN_CELL_ROWS} held-out rows or more (\"other\": the rest, pooled), else MoE against dense models; a "
        "cell of fewer rows is never narrower than the backend's band (a question takes its cell's band at its "
        "device's distance). A decode row whose run takes at least the edge share of its devices' memory (chosen by "
        "the interval score, tokspeed/calibration/memory_edge.py) is in its backend's edge cell instead, both "
        "distances pooled, and in no other; a decode question there states at least that band. "
        "The coverage is over the rows the band is built from (about 90 % by construction); the interval score "
        "is Winkler's at 90 % in log units (lower is sharper)." + _edge_choice(results), "",
        band_table(results, k, {r["engine"]: r["bands"] for r in results})])
