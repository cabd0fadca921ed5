"""The committed catalog file, parsed once: ``[[device]]`` and ``[[link]]`` tables."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).parent / "data" / "hardware.toml"


@lru_cache(maxsize=1)
def load_data() -> dict:
    with open(DATA, "rb") as f:
        return tomllib.load(f)
