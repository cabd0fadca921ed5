"""The built-in hardware catalog (``hardware/data/hardware.toml``, generated from the reference CSV
by ``scripts/build_hardware_catalog.py``), custom TOML files, and ad-hoc devices from flags."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean
from .spec import Hardware

DATA = Path(__file__).parent / "data" / "hardware.toml"


@lru_cache(maxsize=1)
def _catalog() -> dict[str, Hardware]:
    with open(DATA, "rb") as f:
        raw = tomllib.load(f)
    out = {}
    for entry in raw.get("device", []):
        hw = Hardware.from_dict(entry)
        out[hw.id] = hw
    return out


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    idx = {}
    for hid, hw in _catalog().items():
        for key in (hid, hw.name, *hw.aliases):
            idx[key.lower()] = hid
    return idx


def all_hardware() -> list[Hardware]:
    return list(_catalog().values())


def get_hardware(name: str) -> Hardware:
    """A catalog id or alias (case-insensitive), or a path to a TOML file."""
    key = str(name).strip()
    if key.endswith(".toml") or Path(key).is_file():
        return hardware_from_toml(key)
    hid = _index().get(key.lower())
    if hid is None:
        raise UserError(f"unknown hardware {name!r}", did_you_mean(key, list(_index())) or "see `tokspeed hardware`")
    return _catalog()[hid]


def hardware_from_toml(path) -> Hardware:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"no such hardware file: {path}")
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: not valid TOML ({e})") from None
    raw.setdefault("id", p.stem)
    # a probed profile (tokspeed.measure.profile) carries its probe results and fitted calibration
    # in these two tables; they describe the device but are not Hardware fields
    raw.pop("measured", None)
    raw.pop("calibration", None)
    return Hardware.from_dict(raw)
