"""The built-in model catalog: one TOML file per model in ``models/data/``, each with its source."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean
from .spec import ModelSpec

DATA = Path(__file__).parent / "data"


@lru_cache(maxsize=1)
def _entries() -> dict[str, Path]:
    out = {}
    for p in sorted(DATA.glob("*.toml")):
        out[p.stem] = p
    return out


def _aliases() -> dict[str, str]:
    """Lower-case aliases -> id. An entry may list ``aliases = [...]`` in its file."""
    out = {}
    for mid, path in _entries().items():
        out[mid] = mid
        for a in load_entry_raw(path).get("aliases", []):
            out[a.lower()] = mid
    return out


@lru_cache(maxsize=None)
def load_entry_raw(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def model_ids() -> list[str]:
    return list(_entries())


def resolve_id(name: str) -> str | None:
    key = name.strip().lower()
    if key in _entries():
        return key
    return _aliases().get(key)


@lru_cache(maxsize=None)
def get_model(name: str) -> ModelSpec:
    mid = resolve_id(name)
    if mid is None:
        raise UserError(f"unknown model {name!r}", did_you_mean(name, model_ids()) or "see `tokspeed models`")
    raw = dict(load_entry_raw(_entries()[mid]))
    raw.pop("aliases", None)
    raw.setdefault("id", mid)
    return ModelSpec.from_dict(raw)


def all_models() -> list[ModelSpec]:
    return [get_model(m) for m in model_ids()]
