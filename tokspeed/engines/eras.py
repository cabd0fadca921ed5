"""Engine eras: which period of an engine's development a prediction is for.

``era_of("llama.cpp-cuda", "b6000")`` or ``era_of(..., "2025-08")`` -> ``"2025"``. A version is a
llama.cpp build number (``b6000`` or ``6000``), a year-month (``2025-08``), a year (``2025``) or an
era label. Build numbers map to months through the dated anchors in ``eras.toml``; months map to the
era whose ``until`` month is the first at or after them. Engines not listed there have no eras.

``parse_version(engine, version)`` -> ``EngineVersion``: the version parsed once where it enters
(``engines.profile.get_engine``), carrying its family, month and era label to everything after.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import UserError

HERE = Path(__file__).parent
# engines that run llama.cpp underneath share its eras
LLAMA_CPP_FRONTENDS = ("ollama", "lm-studio")


@lru_cache(maxsize=1)
def _table() -> dict:
    with open(HERE / "eras.toml", "rb") as f:
        return tomllib.load(f)


def era_family(engine: str) -> str | None:
    """The key of ``eras.toml`` an engine's versions belong to (None: not versioned)."""
    e = engine.strip().lower()
    fam = "llama.cpp" if e.startswith("llama.cpp") or e in LLAMA_CPP_FRONTENDS else e
    return fam if fam in _table() else None


def era_labels(engine: str) -> list[str]:
    """Era labels of an engine, oldest first ([] if it has none)."""
    fam = era_family(engine)
    return [e["label"] for e in _table()[fam]["eras"]] if fam else []


def _month(text: str) -> int:
    y, m = text.split("-")
    return int(y) * 12 + int(m) - 1


def build_month(engine: str, build: int) -> str:
    """The year-month of a build number: linear between the anchors of ``eras.toml`` (the newest
    anchor's month beyond it)."""
    anchors = [(int(b), _month(d)) for b, d in _table()[era_family(engine)]["builds"]]
    m = anchors[-1][1]
    for (b0, m0), (b1, m1) in zip(anchors, anchors[1:]):
        if b0 <= build <= b1:
            m = m0 + round((m1 - m0) * (build - b0) / (b1 - b0))
            break
    return f"{m // 12}-{m % 12 + 1:02d}"


def version_month(engine: str, version: str) -> str | None:
    """A version string as a year-month (None for an era label); UserError if it is neither."""
    v = str(version).strip().lower()
    labels = era_labels(engine)
    if v in labels:
        return None
    if re.fullmatch(r"b?[0-9]{3,5}", v) and not re.fullmatch(r"20[0-9][0-9]", v):   # ASCII digits only
        return build_month(engine, int(v.lstrip("b")))
    m = re.fullmatch(r"(20[0-9][0-9])(?:-([0-9][0-9]?))?", v)
    if m and 1 <= int(m.group(2) or 12) <= 12:
        return f"{m.group(1)}-{int(m.group(2) or 12):02d}"
    raise UserError(f"engine version {version!r} is neither a build number nor a year-month",
                    f"use e.g. b6000 or 2025-08 (eras: {', '.join(labels)})", field="engine_version")


@dataclass(frozen=True)
class EngineVersion:
    """A version of an engine family parsed once: ``text`` as given, its year-month (None: given as an era label)
    and its era ``label``."""
    family: str
    text: str
    month: str | None
    label: str


def parse_version(engine: str, version) -> EngineVersion | None:
    """``version`` of ``engine`` parsed (None and an ``EngineVersion`` pass through); UserError for a bad version,
    one before the family's first month, or an engine without versions."""
    if version is None or isinstance(version, EngineVersion):
        return version
    fam = era_family(engine)
    if fam is None:
        raise UserError(f"{engine} has no calibrated versions",
                        "`engine_version` applies to llama.cpp and its backends; drop it", field="engine_version")
    month = version_month(engine, version)
    if month is None:
        return EngineVersion(fam, str(version), None, str(version).strip().lower())
    first = _table()[fam]["first"]
    if _month(month) < _month(first):
        raise UserError(f"{fam} version {version!r} ({month}) predates {fam} ({first})",
                        f"use a month from {first} on, or a build number like b6000")
    for era in _table()[fam]["eras"]:
        if not era["until"] or _month(month) <= _month(era["until"]):
            return EngineVersion(fam, str(version), month, era["label"])
    return EngineVersion(fam, str(version), month, _table()[fam]["eras"][-1]["label"])


def era_of(engine: str, version) -> str:
    """The era label of ``version`` for ``engine`` (UserError for a bad version or an unversioned
    engine)."""
    return parse_version(engine, version).label


def era_info(engine: str, label: str) -> dict:
    """The ``eras.toml`` entry of an era ({} if none)."""
    fam = era_family(engine)
    for era in _table()[fam]["eras"] if fam else []:
        if era["label"] == label:
            return era
    return {}


def unfused_attention(engine: str, label: str) -> bool:
    """True where an era of ``engine`` runs attention unfused by default (``eras.toml``: flash_attention =
    false), so each query head streams its K/V head (``EngineProfile.kv_reread``); False for an era
    with FlashAttention on by default, or none."""
    info = era_info(engine, label)
    return bool(info) and not info.get("flash_attention", True)


def newest_unfused_era(engine: str) -> str | None:
    """The newest era of ``engine`` whose attention ran unfused by default (None: none, or no eras)."""
    fam = era_family(engine)
    labels = [e["label"] for e in _table()[fam]["eras"] if not e.get("flash_attention", True)] if fam else []
    return labels[-1] if labels else None


def nearest_era(engine: str, label: str, available) -> str:
    """``label`` if it is ``available``, else the available era closest to it in time (ties: the newer)."""
    order = era_labels(engine)
    available = [a for a in available if a in order]
    if label in available or not available:
        return label
    i = order.index(label)
    return min(available, key=lambda a: (abs(order.index(a) - i), -order.index(a)))


def flash_attention_since(engine: str) -> str:
    """The month FlashAttention kernels (``-fa``) first shipped in ``engine``'s family, or in ``engine`` itself where
    its backend got them later (``backend_flash_attention_since``: ggml-sycl); "" if not listed."""
    fam = era_family(engine)
    if not fam:
        return ""
    table = _table()[fam]
    since = table.get("flash_attention_since", "")
    own = table.get("backend_flash_attention_since", {}).get(engine, "")
    return max(since, own) if since and own else since or own


def release_build(engine: str, number: int) -> bool:
    """Whether a build number llama-bench printed can be ``engine``'s release number: it places the build no earlier
    than the month llama-bench first shipped (eras.toml ``llama_bench_since``; True where the family lists none)."""
    fam = era_family(engine)
    since = _table()[fam].get("llama_bench_since", "") if fam else ""
    return not since or _month(build_month(engine, number)) >= _month(since)


def flash_attention_available(engine: str, version) -> bool:
    """Whether a build of ``engine`` (a build number, a month, or an era label: its last month; or its
    ``EngineVersion``) could run FlashAttention: on or after ``flash_attention_since``. True where the family lists
    no such month."""
    since = flash_attention_since(engine)
    if not since:
        return True
    v = parse_version(engine, version)
    month = v.month or era_info(engine, v.label).get("until") or ""
    return not month or _month(month) >= _month(since)
