"""Held-out errors by backend and by vendor, the bands built from them, and their tables (scripts/fit_calibration.py).

- leave-one-vendor-out (LOVO): a backend refitted without one vendor's rows predicts them -- a user with a GPU maker
  the backend was not fitted on. A backend fitted on one vendor only has nothing left to fit: its held-out rows are
  predicted by its priors, as a user would get them.
- leave-one-backend-out (LOBO): a backend's rows predicted by its priors alone (the backends are fitted one by one,
  so a backend without rows is exactly its priors): a user on a backend tokspeed has no rows for.

The band an answer carries widens with the distance from the data: the fitted band where the device's vendor is in
the backend's rows, the p90 of the LOVO errors where it is not (``tokspeed/engines/bands.toml``, read by
``tokspeed.engines.bands``), the prior's band for a backend without a fit.
"""

from __future__ import annotations

import math

from ..stats import percentile

KINDS = ("decode", "prefill")
MIN_ROWS = 10        # below this many held-out rows a p90 means little: the prior's band stays the floor


def _abs(xs):
    return [abs(x) for x in xs if not math.isnan(x)]


def p50_p90(xs) -> tuple[int, float, float]:
    a = _abs(xs)
    return (len(a), percentile(a, 50), percentile(a, 90)) if a else (0, float("nan"), float("nan"))


def unseen_vendor_band(res, kind: str, prior_pct: float) -> float:
    """p90 |error| of a backend's rows held out by vendor, at least the prior's band where they are few."""
    errs = [e for r, e in zip(res["rows"], res["lovo"]) if r.kind == kind]
    n, _, p90 = p50_p90(errs)
    return max(p90, prior_pct) if n < MIN_ROWS else p90


def bands_toml(results, prior_of) -> str:
    """``tokspeed/engines/bands.toml``: per fitted backend the vendors and families it was fitted on and the band for a
    device of another vendor. ``prior_of(engine)``: the engine's prior profile (its wide band)."""
    out = ["# Written by scripts/fit_calibration.py: do not edit by hand. Per fitted llama.cpp backend: the vendors",
           "# and device families its rows cover, and the band (p90 |error| %) of its rows held out by vendor",
           "# (tokspeed/calibration/holdout.py); tokspeed/engines/bands.py widens an answer's band to it off the data.", ""]
    for res in results:
        prior = prior_of(res["engine"])
        vendors = sorted({r.hw.vendor for r in res["rows"]})
        fams = sorted({r.family for r in res["rows"]})
        out.append(f'["{res["engine"]}"]')
        out.append("vendors = [" + ", ".join(f'"{v}"' for v in vendors) + "]")
        out.append("families = [" + ", ".join(f'"{f}"' for f in fams) + "]")
        out.append(f"decode_unseen_vendor_pct = {round(unseen_vendor_band(res, 'decode', prior.decode_error_pct))}")
        out.append(f"prefill_unseen_vendor_pct = {round(unseen_vendor_band(res, 'prefill', prior.prefill_error_pct))}")
        out.append(f"rows = {len(res['rows'])}")
        out.append("")
    return "\n".join(out)


def backend_table(results, bands: dict) -> str:
    """Markdown: per backend and metric, rows, in-sample, LOVO and LOBO median / p90 |error| %, and the coverage of
    the stated band on held-out-by-vendor predictions (each row's band: the one its vendor would get unseen, from
    the other vendors' LOVO errors where there are enough, else the backend's unseen-vendor band)."""
    lines = ["| backend | metric | rows | vendors | in-sample med / p90 | held out by vendor (LOVO) med / p90 | "
             "held out by backend (LOBO: priors) med / p90 | band coverage (LOVO) |",
             "|---|---|---|---|---|---|---|---|"]
    for res in results:
        for kind in KINDS:
            idx = [i for i, r in enumerate(res["rows"]) if r.kind == kind]
            if not idx:
                continue
            pick = lambda key: [res[key][i] for i in idx]      # noqa: E731
            n, m1, q1 = p50_p90(pick("insample"))
            _, m2, q2 = p50_p90(pick("lovo"))
            _, m3, q3 = p50_p90(pick("prior_err"))
            cov = band_coverage(res, kind, bands.get(res["engine"], {}))
            vendors = ", ".join(sorted({res["rows"][i].hw.vendor for i in idx}))
            lines.append(f"| {res['engine']} | {kind} | {n} | {vendors} | {m1:.1f} / {q1:.1f} | {m2:.1f} / {q2:.1f} | "
                         f"{m3:.1f} / {q3:.1f} | {cov:.0f} % |")
    return "\n".join(lines)


def band_coverage(res, kind: str, band: dict) -> float:
    """% of ``kind`` rows whose LOVO error lies inside the band a device of an unseen vendor is given."""
    idx = [i for i, r in enumerate(res["rows"]) if r.kind == kind and not math.isnan(res["lovo"][i])]
    if not idx:
        return float("nan")
    inside = 0
    for i in idx:
        v = res["rows"][i].hw.vendor
        other = [abs(res["lovo"][j]) for j in idx if res["rows"][j].hw.vendor != v]
        b = percentile(other, 90) if len(other) >= MIN_ROWS else band.get(f"{kind}_unseen_vendor_pct", 0.0)
        b = max(b, band.get(f"{kind}_unseen_vendor_pct", 0.0) if len(other) < MIN_ROWS else b)
        inside += abs(res["lovo"][i]) <= b
    return 100.0 * inside / len(idx)


def pooled_summary(results, key: str, engines_prefix: str = "llama.cpp", id_prefix: str = "") -> str:
    """One line per metric: median / p90 |error| of ``key`` (lovo, prior_err, heldout) over every llama.cpp row
    (whose id starts with ``id_prefix``: ``c3-`` for calibration-3.csv's)."""
    out = []
    for kind in KINDS:
        errs = [e for res in results if res["engine"].startswith(engines_prefix)
                for r, e in zip(res["rows"], res[key]) if r.kind == kind and r.id.startswith(id_prefix)]
        n, m, q = p50_p90(errs)
        out.append(f"{kind} n={n} median {m:.1f} % p90 {q:.1f} %")
    return "; ".join(out)
