"""What a server engine's release decides for its serving steps (``engine_versions.toml``, each entry sourced and
dated): the largest decode batch replayed as a CUDA graph (``graph_max``: past it, or with none, kernels launch
eagerly) and whether the host's work per step overlaps the GPU's (``overlap_host``: the step's host time is hidden).

A release takes the newest entry at or below it; no release stated, the newest entry (today's default). An engine
without entries keeps its ``schedulers.toml`` values.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path


FILE = Path(__file__).parent / "engine_versions.toml"
FIELDS = ("graph_max", "overlap_host")


def version_tuple(text) -> tuple[int, ...] | None:
    """``"0.4.1"`` -> (0, 4, 1); ``"0.5.5.post3"`` -> (0, 5, 5); None for no version or none readable."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(text or ""))
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


@lru_cache(maxsize=1)
def _table() -> dict:
    with open(FILE, "rb") as f:
        return tomllib.load(f)


def release_entry(engine_key: str, version=None) -> dict | None:
    """The table entry that applies to ``version`` of the engine (its ``schedulers.toml`` key), or None: no
    entries for the engine, or a release older than its first entry."""
    entries = sorted(_table().get(engine_key, ()), key=lambda e: version_tuple(e["since"]))
    if not entries:
        return None
    v = version_tuple(version)
    if v is None:
        return entries[-1]
    older = [e for e in entries if version_tuple(e["since"]) <= v]
    return older[-1] if older else None


def release_changes(engine_key: str, version=None) -> dict:
    """{field: value} the release sets on the engine's scheduler (``FIELDS``); {} where no entry applies."""
    e = release_entry(engine_key, version)
    return {k: e[k] for k in FIELDS if e is not None and k in e}
