"""An answer's error band, widened with its distance from the rows the engine was fitted on.

The band is the fitted one (``fitted.toml``: the larger of the in-sample and the held-out-by-device-family p90
|error|) times one factor per way the question lies off the data. Every factor is written by
scripts/fit_calibration.py into ``tokspeed/engines/bands.toml`` (tokspeed/calibration/holdout.py) as the p90, over
the rows held out that way, of |held-out error| / the band the row had without the term: the stretch that covers
nine in ten such rows. The terms:

- ``unseen vendor``: the device's vendor has no rows in the backend's fit (held out by vendor, per backend);
- ``unseen backend``: a llama.cpp-family engine with no fit answers from its priors (held out by backend: each
  backend's rows predicted by its priors, pooled over the other backends);
- ``unseen format``: the weight format's kernel group has no rows in the backend's fit (leave-one-format-group-out);
- ``deep context``: the context is beyond the deepest row of the backend's fit (rows deeper than the median depth
  predicted by a fit on the shallower half);
- ``MoE unseen``: a mixture-of-experts model on a backend whose fit has no MoE rows (leave-MoE-out);
- ``multi-device``: several devices in a setup the fit does not take (row split, a pipelined prompt, batched decode:
  its rows are all held out); a layer split whose passes run its stages in turn is fitted (calibration/split_rows.py).

The first two depend on the device only and are applied when the engine is resolved (``with_band``); the others
depend on the question and are applied by ``predict`` (``stated_pct``). ``band_basis`` lists them for ``explain``.
A machine's own calibration keeps its own band.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

from ..errors import UserError
from ..quant.format_key import format_group
from .compat import runtime_of
from .tables import HERE, load_table

OTHER = "other"      # the cell of the format groups with few held-out rows (calibration.pooled_holdout.cell_groups)
MOE, DENSE = "moe", "dense"     # the cells of mixture-of-experts and of dense models
CELL_LABEL = {MOE: "MoE models", DENSE: "dense models", OTHER: "other (the cells with few rows)"}

TABLE = HERE / "bands.toml"
KINDS = ("decode", "prefill")
TERM_LABEL = {"unseen_vendor": "unseen vendor", "unseen_backend": "unseen backend", "unseen_format": "unseen format",
              "deep_context": "deep context", "moe_unseen": "MoE unseen", "multi_device": "multi-device"}


@lru_cache(maxsize=1)
def _bands() -> dict:
    return load_table(TABLE.name)


def _calibrated(profile) -> bool:
    return "this machine's calibration" in getattr(profile, "source", "")


def _unseen_family(profile) -> bool:
    """A fitted backend answering from its priors: the device's architecture family has no rows in the fit."""
    return getattr(profile, "arch_rows", -1) == 0


def _unfitted_llama(profile) -> bool:
    return not getattr(profile, "fitted", False) and runtime_of(getattr(profile, "name", "")) == "llama.cpp"


def _factor(kind: str, term: str, entry: dict | None = None) -> float:
    """The ``term``'s factor for ``kind``: the engine's own where bands.toml has one, else the pooled one."""
    own = (entry or {}).get(f"{kind}_{term}")
    return float(own if own is not None else _bands().get("terms", {}).get(kind, {}).get(term, 1.0))


def device_terms(profile, hw, kind: str) -> list[tuple[str, float, str]]:
    """(term, factor, why) for the distance of ``hw`` from ``profile``'s fitted rows (vendor, backend)."""
    name = getattr(profile, "name", "")
    entry = _bands().get(name)
    if _calibrated(profile) or _unseen_family(profile):
        return []      # an unseen family's band is already the held-out spread of the priors on unseen families
    if getattr(profile, "fitted", False) and entry and entry.get("fitted", True):
        if hw is not None and hw.vendor not in entry.get("vendors", []):
            return [("unseen_vendor", _factor(kind, "unseen_vendor", entry),
                     f"no {hw.vendor} rows in {name}'s fit ({', '.join(entry.get('vendors', []))})")]
        return []
    if _unfitted_llama(profile):
        return [("unseen_backend", _factor(kind, "unseen_backend", entry),
                 f"no fit for {name}: its priors, as far off as other backends' priors")]
    return []


def workload_terms(profile, kind: str, *, moe: bool = False, format_group: str = "", context: int = 0,
                   n_devices: int = 1, in_turn: tuple = (), fill: float | None = None) -> list[tuple[str, float, str]]:
    """(term, factor, why) for how far the question lies from ``profile``'s fitted rows: a format group, a depth or
    MoE the fit has no rows of, several devices (not for the kinds ``in_turn``: a layer split whose passes run its
    stages one after another, which the fit takes: calibration/split_rows.py). ``fill``: not a term (the
    edge-of-memory cell, ``edge_band``)."""
    if _calibrated(profile) or not (getattr(profile, "fitted", False) or _unfitted_llama(profile)):
        return []
    name = getattr(profile, "name", "")
    entry = _bands().get(name) or {}
    out = []
    if entry.get("fitted", False) and getattr(profile, "fitted", False):
        if format_group and format_group not in entry.get("formats", [format_group]):
            out.append(("unseen_format", _factor(kind, "unseen_format", entry),
                        f"no {format_group} rows in {name}'s fit"))
        deepest = entry.get("max_context")
        if deepest is not None and context > deepest:
            out.append(("deep_context", _factor(kind, "deep_context", entry),
                        f"context {context:,} beyond the fit's deepest row ({deepest:,})"))
        if moe and not entry.get("moe", True):
            out.append(("moe_unseen", _factor(kind, "moe_unseen", entry), f"no MoE rows in {name}'s fit"))
    if n_devices > 1 and kind not in in_turn:
        out.append(("multi_device", _factor(kind, "multi_device", entry),
                    f"{n_devices} devices in a setup the fit does not take: tensor or row split, a pipelined prompt or "
                    "batched decode"))
    return out


def product(terms) -> float:
    return math.prod(f for _, f, _ in terms)


def with_band(profile, hw):
    """``profile`` with its bands stretched by the device terms (an unseen vendor, an engine without a fit)."""
    if hw is None:
        return profile
    d, p = (product(device_terms(profile, hw, k)) for k in KINDS)
    if d == 1.0 and p == 1.0:
        return profile
    return replace(profile, decode_error_pct=profile.decode_error_pct * d,
                   prefill_error_pct=profile.prefill_error_pct * p)


def question_of(spec, quant, context: int, n_devices: int, in_turn: tuple = (), fill: float | None = None) -> dict:
    """``workload_terms``' keywords for a prediction's model spec, weight format, context depth and devices
    (``in_turn``: the kinds whose passes run a layer split's stages one after another; ``fill``: the share of the
    devices' memory the run takes, ``memory.memory_fill``)."""
    group = getattr(quant, "group", "")
    if not group and quant:
        try:
            group = format_group(str(quant))
        except UserError:          # a file's own format: no group, no term
            group = ""
    return {"moe": bool(getattr(spec, "n_experts", 0)), "format_group": group, "context": int(context or 0),
            "n_devices": int(n_devices or 1), "in_turn": tuple(in_turn), "fill": fill}


def band_cell(profile, kind: str, format_group: str = "", moe: bool = False) -> tuple[float, str]:
    """(ratio, why): the band of the question's cell over the backend's at the device's distance from the fit
    (bands.toml ``<kind>_cell_pct`` for a family in the fit, ``<kind>_unseen_cell_pct`` for one the fit lacks, whose
    answer is the priors: the held-out rows split into MoE models and dense weight-format groups, or MoE against dense
    models, Mondrian conformal, ``calibration.pooled_holdout.band_cells``); (1, "") where the backend has no cells
    there, the format none (a group the fit lacks: the backend's band and the unseen-format term), or the answer is
    not the fit's nor its priors' on an unseen family (a machine's calibration, an engine without a fit)."""
    cell = _band_cell(profile, kind, format_group, moe)
    if cell is None:
        return 1.0, ""
    ratio, name, pct, rows, seen = cell
    what = (f"{format_group} weights" if name == format_group else CELL_LABEL[name] if name != OTHER
            else f"the cells with few rows ({'MoE models' if moe else format_group + ' weights'} among them)")
    whose = "families held out of the fit" if _unseen_family(profile) else "that cell"
    return ratio, (f"{what}: ±{pct:g} % over {rows} held-out rows of {whose}, where "
                   f"{getattr(profile, 'name', '')}'s rows of every kind give ±{seen:g} %")


def _band_cell(profile, kind: str, format_group: str, moe: bool):
    """``band_cell``'s (ratio, cell, its band %, its rows, the backend's band %), or None where it is 1."""
    unseen = _unseen_family(profile)
    if _calibrated(profile) or not (unseen or getattr(profile, "fitted", False)) or not format_group:
        return None
    entry = _bands().get(getattr(profile, "name", "")) or {}
    pre = f"{kind}_unseen" if unseen else kind
    cells, base = entry.get(f"{pre}_cell_pct") or {}, entry.get(f"{kind}_{'unseen' if unseen else 'seen'}_pct")
    if not base or format_group not in entry.get("formats", []) or (moe and not entry.get("moe")):
        return None          # the unseen-format or MoE-unseen term widens the backend's band instead
    own = (MOE,) if moe else (DENSE, format_group)
    cell = next((c for c in own + (OTHER,) if c in cells), "")
    if not cell:
        return None
    return cells[cell] / base, cell, cells[cell], (entry.get(f"{pre}_cell_rows") or {}).get(cell, 0), base


def edge_band(profile, kind: str, fill: float | None) -> tuple[float, str] | None:
    """(band %, why) of the edge-of-memory cell where the run takes at least bands.toml ``[edge] fill`` of its fullest
    device's memory and the backend has an edge cell (``<kind>_edge_pct`` over ``<kind>_edge_rows`` held-out entries,
    calibration/memory_edge.py: its rows held out by source and by device, each counted once per way): near the edge
    the backend's own buffers decide whether the run fits, and a driver that pages the excess to host memory instead
    of failing decodes several times slower; None elsewhere (and for a machine's own calibration)."""
    edge = _bands().get("edge") or {}
    entry = _bands().get(getattr(profile, "name", "")) or {}
    pct = entry.get(f"{kind}_edge_pct")
    if fill is None or not edge.get("fill") or fill < edge["fill"] or pct is None or _calibrated(profile):
        return None
    return float(pct), (f"the run takes {100 * fill:.0f} % of its fullest device's memory, {100 * edge['fill']:.0f} % "
                        f"or more: ±{pct:g} % over {entry.get(f'{kind}_edge_rows', 0)} held-out entries there, where "
                        "a driver that pages the excess to host memory decodes several times slower")


def stated_pct(profile, kind: str, **question) -> float:
    """The band ``predict`` states for ``kind``: the profile's (device terms in), scaled to its question's cell
    (``band_cell``: MoE or dense, the weight format), times the question's terms; at the edge of the devices' memory
    never narrower than the edge cell's (``edge_band``)."""
    base = profile.decode_error_pct if kind == "decode" else profile.prefill_error_pct
    cell = _band_cell(profile, kind, question.get("format_group", ""), question.get("moe", False))   # the ratio alone
    band = base * (cell[0] if cell else 1.0) * product(workload_terms(profile, kind, **question))
    edge = edge_band(profile, kind, question.get("fill"))
    return max(band, edge[0]) if edge else band


def band_basis(profile, hw, **question) -> dict:
    """What ``profile``'s band on ``hw`` (for ``question``: ``workload_terms``' keywords) is made of: ``basis``
    (fitted | prior | calibrated), per kind the base band, each term applied with its factor and why, the band."""
    name = getattr(profile, "name", "")
    entry = _bands().get(name) or {}
    if _calibrated(profile):
        basis, detail = "calibrated", "this machine's own calibration runs"
    elif _unseen_family(profile):
        basis, detail = "prior", (f"no rows of this device's architecture family in {name}'s fit: its priors, with "
                                  f"the spread of the priors on the families held out of the fit "
                                  f"({entry.get('unseen_band_rows', 0)} held-out rows)")
    elif getattr(profile, "fitted", False) and entry:
        n = getattr(profile, "arch_rows", -1)
        basis, detail = "fitted", (f"{name} fitted on {entry.get('rows', 0)} rows of "
                                   + ", ".join(entry.get("vendors", [])) + " devices"
                                   + (f", {n} of this architecture family" if n > 0 else "")
                                   + (f"; band: the spread of {entry['seen_band_rows']} rows held out by source and "
                                      "by device" if entry.get("seen_band_rows") else ""))
    else:
        basis, detail = "prior", f"{name} has no fitted rows: its priors' band"
    out = {"basis": basis, "detail": detail}
    driver = getattr(profile, "driver", "")
    if driver and basis == "fitted" and not profile.driver_fitted:
        # no held-out rows measure a driver's spread (no term of its own): it is inside the vendor and backend factors
        out["detail"] += (f"; none under the {driver} driver: it sets the kernel path only, its spread is inside the "
                          "vendor and backend factors")
    for kind in KINDS:
        terms = device_terms(profile, hw, kind) + workload_terms(profile, kind, **question)
        shown = profile.decode_error_pct if kind == "decode" else profile.prefill_error_pct
        dev = product(device_terms(profile, hw, kind))
        ratio, cell = band_cell(profile, kind, question.get("format_group", ""), question.get("moe", False))
        out[f"{kind}_base_pct"] = shown * ratio / dev
        out[f"{kind}_cell"] = cell
        out[f"{kind}_terms"] = [{"term": t, "factor": f, "why": w} for t, f, w in terms]
        edge = edge_band(profile, kind, question.get("fill"))
        out[f"{kind}_pct"] = stated_pct(profile, kind, **question)
        # said where it widens the band: a narrower edge cell is not the band stated
        out[f"{kind}_edge"] = {"pct": edge[0], "why": edge[1]} if edge and edge[0] >= out[f"{kind}_pct"] else None
    return out


def describe(basis: dict, kind: str) -> str:
    """One line: ``±12 % fitted (...; Q4 weights: ...) × 1.9 unseen vendor (...) = ±23 %``."""
    cell = basis.get(f"{kind}_cell", "")
    text = f"±{basis[f'{kind}_base_pct']:.0f} % {basis['basis']} ({basis['detail']}{'; ' + cell if cell else ''})"
    for t in basis[f"{kind}_terms"]:
        text += f" × {t['factor']:.2f} {TERM_LABEL.get(t['term'], t['term'])} ({t['why']})"
    edge = basis.get(f"{kind}_edge")
    if edge:
        text += f"; at the edge of memory at least ±{edge['pct']:.0f} % ({edge['why']})"
    return text + (f" = ±{basis[f'{kind}_pct']:.0f} %" if basis[f"{kind}_terms"] or edge else "")


def prediction_basis(p) -> dict:
    """``band_basis`` of a ``Prediction``: its engine, device, model, format, depth and devices."""
    layout = getattr(p, "layout", None)
    n = layout.parallel.n_devices if layout is not None and getattr(layout, "parallel", None) else 1
    return band_basis(p.engine_profile, p.hw, **question_of(p.spec, p.quant, p.context, n,
                                                           getattr(p, "band_in_turn", ()),
                                                           getattr(p, "band_fill", None)))
