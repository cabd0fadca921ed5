"""Held-out errors, the band factors built from them, and their tables (scripts/fit_calibration.py).

Each way a question can lie off the fitted rows has a held-out test, and its factor is the p90, over the rows held
out that way, of |held-out error| / the band the row has without the term (``ratio_factor``): the stretch that
covers nine rows in ten. ``tokspeed.engines.bands`` multiplies an answer's band by the factors that apply.

- by vendor (LOVO, per backend): the backend refitted without one vendor's rows predicts them; a backend of one
  vendor has nothing left to fit, so its rows are predicted by its priors, as a user would get them;
- by backend (LOBO, pooled): every llama.cpp-family engine's rows predicted by its priors alone, over its prior band;
  an engine without a fit but with rows gets the larger of the other engines' factor and its own rows' (the fitted
  band's recipe: the p90 of the rows' own errors); the tables score it with the other engines' only;
- by format group, by depth, by MoE (pooled over the backends): the backend refitted without a format group's rows,
  without the rows deeper than its median depth, without its MoE rows, predicts them;
- several devices (pooled): the multi-device rows the fit does not take (row split, pipelined prompts; a layer split
  run in turn is fitted, calibration/split_rows.py) are all held out.

Pooled factors weigh each engine the same. A fitted backend with MIN_ROWS held-out rows of a term has its own factor
(narrow where its evidence allows); a factor resting on fewer rows is not written: the engine falls back to the
pooled one, a pooled one to 1 (no evidence either way; the table says so).
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

from ..engines.compat import runtime_of
from ..engines.profile import prior_profile
from ..quant.format_key import format_group
from ..resolve import resolve_model
from ..scale.parallel import row_split_prefill
from ..stats import band_error_pct, percentile, weighted_percentile
from ..toml_writer import Inline, dumps, sig6
from .evaluate import error_pct, predicted_tok_s

KINDS = ("decode", "prefill")
MIN_ROWS = 10        # below this many held-out rows a p90 means little
COVER = 90           # the quantile each factor covers
CONDITIONS = ("unseen_format", "deep_context", "moe_unseen")   # leave-condition-out refits (res["loco"])


def _abs(xs):
    return [abs(x) for x in xs if not math.isnan(x)]


def p50_p90(xs) -> tuple[int, float, float]:
    a = _abs(xs)
    return (len(a), percentile(a, 50), percentile(a, 90)) if a else (0, float("nan"), float("nan"))


def ratio_factor(errs, bases, groups=None) -> float | None:
    """p90 of the band error (``stats.band_error_pct``) / band over the rows with an error (at least 1: a term
    never narrows a band); None below
    MIN_ROWS rows. ``groups`` (the rows' engines): each group weighs the same, so a factor pooled over the backends is
    not the largest backend's alone (an unseen backend is one more backend, not one more CUDA row)."""
    groups = groups if groups is not None else [""] * len(errs)
    r = [(band_error_pct(e) / b, g) for e, b, g in zip(errs, bases, groups) if not math.isnan(e) and b > 0]
    if len(r) < MIN_ROWS:
        return None
    count = Counter(g for _, g in r)
    weight = {g: len(r) / (len(count) * c) for g, c in count.items()}     # equal weights: ``percentile``
    return max(1.0, weighted_percentile([(x, weight[g]) for x, g in r], COVER))


# ---- the held-out pairs (error, band without the term) of each term --------------------------------------------


def off_edge(res, errs) -> list:
    """(row, error) of a backend's rows outside its edge-of-memory cell (``res["edge"]``, calibration/memory_edge.py):
    the edge rows are in no other band, the distance factors' included."""
    edge = res.get("edge")
    return [(r, e) for i, (r, e) in enumerate(zip(res["rows"], errs)) if edge is None or not edge[i]]


def vendor_pairs(res, kind: str, skip_vendor: str | None = None):
    """(LOVO error, fitted band, engine) of a fitted backend's ``kind`` rows (without ``skip_vendor``'s)."""
    return [(e, res["band"][kind], res["engine"]) for r, e in off_edge(res, res["lovo"])
            if r.kind == kind and r.hw.vendor != skip_vendor]


def backend_pairs(results, kind: str, skip_engine: str | None = None):
    """(error of the priors, prior band, engine) of every engine's ``kind`` rows (without ``skip_engine``'s)."""
    return [(e, res["prior_band"][kind], res["engine"]) for res in results if res["engine"] != skip_engine
            for r, e in off_edge(res, res["prior_err"]) if r.kind == kind]


def condition_pairs(results, term: str, kind: str, skip_engine: str | None = None):
    """(error with the condition held out, the row's band without the term, engine) over the fitted backends."""
    out = []
    for res in results:
        if res["engine"] == skip_engine or not res.get("fitted"):
            continue
        if term == "multi_device":
            out += [(e, b, res["engine"]) for r, e, b in zip(res["multi_rows"], res["multi_err"], res["multi_base"])
                    if r.kind == kind]
        else:
            out += [(e, res["band"][kind], res["engine"]) for r, e in off_edge(res, res["loco"][term])
                    if r.kind == kind]
    return out


def _factor(pairs):
    return ratio_factor([p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs])


def vendor_factor(res, kind: str) -> float | None:
    """The unseen-vendor factor of one fitted backend's own rows (None: too few)."""
    return _factor(vendor_pairs(res, kind))


def pooled_vendor_factor(results, kind: str, skip=None) -> float | None:
    """The unseen-vendor factor pooled over the fitted backends of ``results`` (but ``skip``)."""
    return _factor([p for res in results if res.get("fitted") and res is not skip for p in vendor_pairs(res, kind)])


def factors(results) -> dict:
    """{term: {kind: factor or None}} pooled over every engine of ``results``."""
    out = {"unseen_vendor": {k: pooled_vendor_factor(results, k) for k in KINDS},
           "unseen_backend": {k: _factor(backend_pairs(results, k)) for k in KINDS}}
    for term in CONDITIONS + ("multi_device",):
        out[term] = {k: _factor(condition_pairs(results, term, k)) for k in KINDS}
    return out


# ---- the rows beyond the fit's: multi-device rows, engines without a fit ----------------------------------------


@lru_cache(maxsize=None)
def is_moe(model: str) -> bool:
    return bool(resolve_model(model)[0].n_experts)


def multi_device_errors(res, rows) -> tuple[list, list]:
    """The backend's multi-device rows the fit does not take (held out) and the signed % error of the fitted
    profile on them, as predict lays them out (row-split prefill is not modelled and left out)."""
    prof = res["profile"]
    out_rows, errs = [], []
    for r in rows:
        if row_split_prefill(r.engine, r.parallel, r.n_devices, r.metric):
            continue
        p = prof.get(r.era, prof[res["version"]]) if isinstance(prof, dict) else prof
        try:
            errs.append(error_pct(predicted_tok_s(r, p), r.tok_s))
        except Exception:        # noqa: BLE001  -- a row predict refuses is no evidence either way
            continue
        out_rows.append(r)
    return out_rows, errs


def unfitted_engine(engine: str, rows) -> dict:
    """A llama.cpp-family engine without a fit (its priors, as a user gets them): its rows' errors."""
    ok, errs = [], []
    for r in rows:
        try:
            errs.append(error_pct(predicted_tok_s(r), r.tok_s))
        except Exception:        # noqa: BLE001
            continue
        ok.append(r)
    return dict(engine=engine, rows=ok, prior_err=errs, fitted=False)


def held_out_tables(results) -> str:
    """Band coverage per engine held out at each distance, the band factors, and the leave-one-vendor-out /
    leave-one-backend-out error tables (markdown)."""
    rows = [r for res in results if res.get("fitted") for r in res["rows"]]
    fitted = [res for res in results if res.get("fitted")]
    return "\n".join([
        f"Fitted on {len(rows)} rows ({sum(r.id.startswith('c3-') for r in rows)} of them from calibration-3.csv; "
        f"{sum(r.n_devices > 1 for r in rows)} of them layer splits run in turn, each device's own passes plus the "
        "hand-offs: tokspeed/calibration/split_rows.py).", "",
        "Band coverage: the share of rows whose measured value lies inside the band a user at that distance from the "
        "data is given, and the median band (±%). Same family: the fitted band on the fitted rows. Held out by "
        "family / vendor / backend: the row predicted by a fit without its device family / vendor / backend (the "
        "priors), its band built without the row's own group (nested).", "",
        coverage_table(results), "",
        "The band's distance terms (tokspeed/engines/bands.py): each factor is the p90 of |held-out error| / band "
        "over the rows held out that way, pooled over the engines; the last column scores each engine's rows with "
        "the factor of the other engines' rows.", "",
        terms_table(results), "",
        backend_table(results), "",
        "Pooled over the llama.cpp backends: held out by vendor " + pooled_summary(fitted, "lovo")
        + "; held out by backend " + pooled_summary(fitted, "prior_err")
        + "; held out by device family " + pooled_summary(fitted, "heldout") + ".", "",
        "calibration-3.csv's fitted rows alone: held out by vendor " + pooled_summary(fitted, "lovo", id_prefix="c3-")
        + "; held out by backend " + pooled_summary(fitted, "prior_err", id_prefix="c3-") + ".", "",
        "The families fitted before calibration-3.csv (CUDA and Metal rows), held out by device family: "
        + pooled_summary([res for res in fitted if res["engine"] in ("llama.cpp-cuda", "llama.cpp-metal")],
                         "heldout") + "."])


def band_results(results, rows, band) -> list[dict]:
    """The llama.cpp-family engines for the bands: the fitted backends with their bands and multi-device rows, and
    every engine of the rows without a fit (its priors). ``band(res, kind, prior_pct)``: the fit's band recipe."""
    llama = [res for res in results if res["engine"].startswith("llama.cpp")]
    for res in llama:
        prior = prior_profile(res["engine"])
        res["prior_band"] = {k: getattr(prior, f"{k}_error_pct") for k in KINDS}
        res["band"] = {k: float(round(band(res, k, res["prior_band"][k]))) for k in KINDS}
        res["multi_rows"], res["multi_err"] = multi_device_errors(
            res, [r for r in rows if r.skip == "multi-device" and r.engine == res["engine"]])
    done = {res["engine"] for res in results}
    for e in sorted({r.engine for r in rows if not r.skip and runtime_of(r.engine) == "llama.cpp"} - done):
        res = unfitted_engine(e, [r for r in rows if not r.skip and r.engine == e])
        prior = prior_profile(e)
        res["prior_band"] = {k: getattr(prior, f"{k}_error_pct") for k in KINDS}
        llama.append(res)
    pooled = {k: pooled_vendor_factor(llama, k) for k in KINDS}
    for res in llama:       # a multi-device row's band without the term: its device terms in (an unseen vendor)
        if res.get("fitted"):
            seen = {r.hw.vendor for r in res["rows"]}
            own = {k: vendor_factor(res, k) or pooled[k] or 1.0 for k in KINDS}
            res["multi_base"] = [res["band"][r.kind] * (own[r.kind] if r.hw.vendor not in seen else 1.0)
                                 for r in res["multi_rows"]]
    return llama



# ---- bands.toml --------------------------------------------------------------------------------------------------

HEADER = """# Written by scripts/fit_calibration.py: do not edit by hand (tokspeed/calibration/holdout.py).
# [terms.<kind>]: factors pooled over the backends; per engine: what its fit covers (vendors, families, weight-format
# groups, the deepest context, MoE rows) and its own factors where it has enough held-out rows. A factor is the p90
# of the held-out band error / band over the rows held out that way; tokspeed/engines/bands.py multiplies the band by
# each factor that applies. <kind>_cell_pct: the seen-family band per cell (MoE models, each dense weight-format group
# with enough rows, "other": the rest pooled; or "moe" against "dense"), over its held-out rows alone (<kind>_cell_rows
# of them), <kind>_seen_pct: the backend's over them all (fitted.toml's <kind>_error_pct), whose ratio bands.band_cell
# applies; <kind>_unseen_cell_pct / _rows and <kind>_unseen_pct: the same for a device whose family the fit lacks
# (its priors; fitted.toml's <kind>_unseen_pct). [edge] fill: the share of its fullest device's memory where a run's
# edge-of-memory cell starts (0: none), chosen on [edge] grid by the mean interval score; <kind>_edge_pct / _rows:
# the backend's band there (tokspeed/calibration/memory_edge.py), its edge rows left out of every other band.
"""


def bands_data(results) -> dict:
    """The content of ``tokspeed/engines/bands.toml`` (``tokspeed.toml_writer`` writes it)."""
    pooled = factors(results)
    data = {"terms": {k: {t: round(v[k], 2) for t, v in pooled.items() if v[k] is not None} for k in KINDS}}
    chosen = next((res for res in results if res.get("edge_scores")), None)
    if chosen:             # the edge-of-memory cell (calibration/memory_edge.py): where it starts (0: no cell)
        scores = chosen["edge_scores"]
        data["edge"] = {"fill": float(chosen["edge_fill"] or 0.0), "grid": [float(f or 0.0) for f in scores],
                        "interval_score": [round(v, 4) for v in scores.values()]}
    for res in results:
        rows = res["rows"]
        e = {"fitted": bool(res.get("fitted")), "rows": len(rows)}
        if res.get("fitted"):
            e.update(vendors=sorted({r.hw.vendor for r in rows}), families=sorted({r.family for r in rows}),
                     formats=sorted({format_group(r.quant) for r in rows}), max_context=max(r.context for r in rows),
                     moe=any(res["moe"]),
                     # the GPU drivers of its rows (engines/driver.py: driver_fitted reads this list)
                     drivers=sorted({r.driver for r in rows if getattr(r, "driver", "")}))
            e.update(res.get("band_rows", {}))   # held-out rows behind the band (pooled_holdout.band_rows)
            for k, (b, n) in (res.get("edge_bands") or {}).items() if res.get("edge_fill") else ():
                e.update({f"{k}_edge_pct": float(round(b)), f"{k}_edge_rows": n})    # memory_edge.edge_bands
            for k in KINDS:       # the band by cell at each distance (pooled_holdout.band_cells)
                for d, pre in (("seen", k), ("unseen", f"{k}_unseen")):
                    cells = {c: v for (kind, dist, c), v in res.get("cell_bands", {}).items()
                             if kind == k and dist == d}
                    if cells:
                        e[f"{k}_{d}_pct"] = float(round(res["bands"][(k, d)]))    # as fitted.toml rounds it
                        e[f"{pre}_cell_pct"] = Inline({c: float(round(b)) for c, (b, _) in cells.items()})
                        e[f"{pre}_cell_rows"] = Inline({c: n for c, (_, n) in cells.items()})
            for k in KINDS:       # the backend's own factors where it has enough held-out rows (else pooled)
                own = {"unseen_vendor": vendor_factor(res, k)}
                own.update({t: _factor(condition_pairs([res], t, k)) for t in CONDITIONS + ("multi_device",)})
                e.update({f"{k}_{t}": round(f, 2) for t, f in own.items() if f is not None})
        else:
            for k in KINDS:       # this engine's own rows where they are enough (MIN_ROWS), else the other engines'
                # priors: a band its own rows measure needs no borrowed widening (scripts/fit_cpu_kernels.py sets the
                # CPU engines' prior bands from their rows), one they cannot measure takes the other backends' spread
                f = _factor(backend_pairs([res], k))
                f = f if f is not None else _factor(backend_pairs(results, k, skip_engine=res["engine"]))
                if f is not None:
                    e[f"{k}_unseen_backend"] = round(f, 2)
        data[res["engine"]] = e
    return data


def bands_toml(results) -> str:
    return HEADER + dumps(bands_data(results), number=sig6)


# ---- tables (held out, nested: a row's band never rests on the row's own group) ----------------------------------


def _cover(pairs) -> tuple[int, float, float]:
    """(n, % of rows inside their band (``stats.band_error_pct`` <= band), median band %) over (error, band, ...)
    pairs with an error."""
    ok = [(p[0], p[1]) for p in pairs if not math.isnan(p[0])]
    if not ok:
        return 0, float("nan"), float("nan")
    return len(ok), 100.0 * sum(band_error_pct(e) <= b for e, b in ok) / len(ok), percentile([b for _, b in ok], 50)


def _fallback(f, pooled):
    return f if f is not None else (pooled if pooled is not None else 1.0)


def family_pairs(res, kind: str):
    """(LOFO error, band) with the band from the other families' LOFO errors (the fitted band's recipe)."""
    idx = [i for i, r in enumerate(res["rows"]) if r.kind == kind and not math.isnan(res["heldout"][i])]
    ins = percentile([band_error_pct(res["insample"][i]) for i in idx], 90) if idx else float("nan")
    out = []
    for i in idx:
        fam = res["rows"][i].family
        other = [band_error_pct(res["heldout"][j]) for j in idx if res["rows"][j].family != fam]
        out.append((res["heldout"][i], max(ins, percentile(other, 90)) if len(other) >= MIN_ROWS
                    else res["band"][kind]))
    return out


def nested_vendor_pairs(results, res, kind: str):
    """(LOVO error, fitted band x the vendor factor of the other vendors' rows, else of the other backends')."""
    out = []
    for r, e in zip(res["rows"], res["lovo"]):
        if r.kind != kind:
            continue
        pooled = pooled_vendor_factor(results, kind, skip=res)
        f = _fallback(_factor(vendor_pairs(res, kind, skip_vendor=r.hw.vendor)), pooled)
        out.append((e, res["band"][kind] * f))
    return out


def nested_backend_pairs(results, res, kind: str):
    f = _fallback(_factor(backend_pairs(results, kind, skip_engine=res["engine"])), None)
    return [(e, res["prior_band"][kind] * f) for r, e in zip(res["rows"], res["prior_err"]) if r.kind == kind]


def _cell(n, cov, width) -> str:
    return "-" if not n else f"{cov:.0f} % (±{width:.0f} %)"


def coverage_table(results) -> str:
    """Markdown: per engine and metric, coverage of the band a user at each distance gets, and its median width."""
    lines = ["| engine | metric | rows | same family: in band (median band) | held out by family | "
             "held out by vendor | held out by backend |", "|---|---|---|---|---|---|---|"]
    for res in results:
        for kind in KINDS:
            n = sum(r.kind == kind for r in res["rows"])
            if not n:
                continue
            if res.get("fitted"):
                seen = [(e, res["band"][kind]) for r, e in zip(res["rows"], res["insample"]) if r.kind == kind]
                cells = [_cover(seen), _cover(family_pairs(res, kind)), _cover(nested_vendor_pairs(results, res, kind))]
            else:
                cells = [(0, 0, 0)] * 3
            cells.append(_cover(nested_backend_pairs(results, res, kind)))
            lines.append(f"| {res['engine']} | {kind} | {n} | " + " | ".join(_cell(*c) for c in cells) + " |")
    return "\n".join(lines)


def terms_table(results) -> str:
    """Markdown: per term and metric, the pooled factor, its held-out rows and, nested (the factor from the other
    engines' rows), the coverage and median width of the band it gives them."""
    pooled = factors(results)
    lines = ["| term | metric | factor | held-out rows | in band, factor from the other engines (median band) |",
             "|---|---|---|---|---|"]
    for term in ("unseen_vendor", "unseen_backend") + CONDITIONS + ("multi_device",):
        for kind in KINDS:
            nested = []
            for res in results:
                if term == "unseen_vendor":
                    own = vendor_pairs(res, kind) if res.get("fitted") else []
                    other = [p for o in results if o.get("fitted") and o is not res for p in vendor_pairs(o, kind)]
                elif term == "unseen_backend":
                    own, other = (backend_pairs([res], kind), backend_pairs(results, kind, skip_engine=res["engine"]))
                else:
                    own = condition_pairs([res], term, kind)
                    other = condition_pairs(results, term, kind, skip_engine=res["engine"])
                f = _fallback(_factor(other), None)
                nested += [(p[0], p[1] * f) for p in own]
            n, cov, width = _cover(nested)
            fac = pooled[term][kind]
            lines.append(f"| {term.replace('_', ' ')} | {kind} | {'1 (too few rows)' if fac is None else f'{fac:.2f}'} "
                         f"| {n} | {_cell(n, cov, width)} |")
    return "\n".join(lines)


def backend_table(results) -> str:
    """Markdown: per fitted backend and metric, rows, in-sample, LOVO and LOBO median / p90 |error| %."""
    lines = ["| backend | metric | rows | vendors | in-sample med / p90 | held out by vendor (LOVO) med / p90 | "
             "held out by backend (LOBO: priors) med / p90 |", "|---|---|---|---|---|---|---|"]
    for res in results:
        if not res.get("fitted"):
            continue
        for kind in KINDS:
            idx = [i for i, r in enumerate(res["rows"]) if r.kind == kind]
            if not idx:
                continue
            pick = lambda key: [res[key][i] for i in idx]      # noqa: E731
            n, m1, q1 = p50_p90(pick("insample"))
            _, m2, q2 = p50_p90(pick("lovo"))
            _, m3, q3 = p50_p90(pick("prior_err"))
            vendors = ", ".join(sorted({res["rows"][i].hw.vendor for i in idx}))
            lines.append(f"| {res['engine']} | {kind} | {n} | {vendors} | {m1:.1f} / {q1:.1f} | {m2:.1f} / {q2:.1f} | "
                         f"{m3:.1f} / {q3:.1f} |")
    return "\n".join(lines)


def pooled_summary(results, key: str, engines_prefix: str = "llama.cpp", id_prefix: str = "") -> str:
    """One line per metric: median / p90 |error| of ``key`` (lovo, prior_err, heldout) over every fitted llama.cpp
    row (whose id starts with ``id_prefix``: ``c3-`` for calibration-3.csv's)."""
    out = []
    for kind in KINDS:
        errs = [e for res in results if res["engine"].startswith(engines_prefix) and res.get("fitted")
                for r, e in zip(res["rows"], res[key]) if r.kind == kind and r.id.startswith(id_prefix)]
        n, m, q = p50_p90(errs)
        out.append(f"{kind} n={n} median {m:.1f} % p90 {q:.1f} %")
    return "; ".join(out)
