"""An answer's error band, widened with the distance from the rows the engine was fitted on.

``tokspeed/engines/bands.toml`` (written by scripts/fit_calibration.py, tokspeed/calibration/holdout.py) lists per
fitted llama.cpp backend the vendors and device families of its rows and the p90 |error| of its rows held out by
vendor. A device of a vendor the backend has no rows for gets that band (at least the fitted one); a device of a
known vendor keeps the fitted band (the larger of in-sample and held-out-family p90); an engine without a fit keeps
its prior's wide band. ``band_basis`` says which, for ``explain``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from .tables import HERE, load_table

TABLE = HERE / "bands.toml"


@lru_cache(maxsize=1)
def _bands() -> dict:
    return load_table(TABLE.name)


def band_basis(profile, hw) -> dict:
    """What ``profile``'s band on ``hw`` is made of: ``basis`` (fitted | unseen-vendor | prior | calibrated), the
    decode / prefill band in %, and the rows it rests on."""
    name = getattr(profile, "name", "")
    out = {"decode_pct": profile.decode_error_pct, "prefill_pct": profile.prefill_error_pct}
    entry = _bands().get(name)
    if "this machine's calibration" in getattr(profile, "source", ""):
        return {**out, "basis": "calibrated", "detail": "this machine's own calibration runs"}
    if not getattr(profile, "fitted", False) or entry is None:
        return {**out, "basis": "prior", "detail": f"{name} has no fitted rows: its priors' wide band"}
    if hw is not None and hw.vendor not in entry.get("vendors", []):
        return {**out, "basis": "unseen-vendor",
                "detail": f"no {hw.vendor} rows in {name}'s fit: the p90 error of its rows held out by vendor"}
    return {**out, "basis": "fitted", "detail": f"{name} fitted on {entry.get('rows', 0)} rows of "
                                                 + ", ".join(entry.get("vendors", [])) + " devices"}


def with_band(profile, hw):
    """``profile`` with its band widened to the unseen-vendor band where ``hw``'s vendor is not in its rows."""
    entry = _bands().get(getattr(profile, "name", ""))
    if hw is None or entry is None or not getattr(profile, "fitted", False) or hw.vendor in entry.get("vendors", []):
        return profile
    return replace(profile,
                   decode_error_pct=max(profile.decode_error_pct, entry.get("decode_unseen_vendor_pct", 0.0)),
                   prefill_error_pct=max(profile.prefill_error_pct, entry.get("prefill_unseen_vendor_pct", 0.0)))
