"""The catalog's devices as ``Hardware`` records, built once from the committed catalog file.

The layer under both ways of finding one: exact names (``catalog.get_hardware``) and a free-form name
(``match.closest_devices``), so neither of those imports the other for the list.
"""

from __future__ import annotations

from functools import lru_cache

from .datafile import load_data
from .spec import Hardware


@lru_cache(maxsize=1)
def catalog_devices() -> dict[str, Hardware]:
    """id -> Hardware, in catalog order."""
    return {hw.id: hw for hw in map(Hardware.from_dict, load_data().get("device", []))}


def all_hardware() -> list[Hardware]:
    return list(catalog_devices().values())
