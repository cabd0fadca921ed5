"""Interconnects (PCIe, NVLink, NVLink-C2C, Infinity Fabric, Thunderbolt) and reading a device's
``host_link`` text ("PCIe 4.0 x8") into a per-direction bandwidth from those link rows.

Vendors print link bandwidth as a bidirectional sum ("PCIe Gen5 128 GB/s", "NVLink 900 GB/s");
a transfer in one direction gets half of it. Every ``*_gbps`` here is per direction unless its
name says ``bidirectional``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from ..errors import UserError
from .datafile import load_data
from .names import NameIndex


ASSUMED_GPU_LINK = "pcie-4-x16"   # a discrete GPU whose catalog entry names no host link


@dataclass(frozen=True)
class Link:
    id: str
    name: str
    vendor: str
    per_direction_gbps: float       # payload bandwidth one way, decimal GB/s
    bidirectional_gbps: float       # the sum vendors print
    release_year: int = 0
    source: str = ""
    notes: str = ""
    aliases: tuple = field(default=(), compare=False)

    def __post_init__(self):
        if not self.per_direction_gbps > 0:
            raise UserError(f"link {self.id}: per_direction_gbps must be positive")
        object.__setattr__(self, "aliases", tuple(self.aliases))

    @property
    def per_direction_bytes_s(self) -> float:
        return self.per_direction_gbps * 1e9

    def to_dict(self) -> dict:
        d = asdict(self)
        d["aliases"] = list(self.aliases)
        return d


@lru_cache(maxsize=1)
def _links() -> dict[str, Link]:
    return {e["id"]: Link(**e) for e in load_data().get("link", [])}


@lru_cache(maxsize=1)
def _index() -> NameIndex:
    return NameIndex("link", [(l.id, l.name, l.aliases) for l in _links().values()])


def all_links() -> list[Link]:
    return list(_links().values())


def get_link(name: str) -> Link:
    """A link id (``pcie-4-x16``), its full name or a short alias (``NVLink 4``), any case."""
    return _links()[_index().resolve(name)]


_PCIE = re.compile(r"PCIe\s*(?:Gen\s*)?(\d)(?:\.0)?\s*x(\d+)", re.I)
_BIDIR = re.compile(r"(\d+(?:\.\d+)?)\s*GB/s\s*bidir", re.I)


def host_link_of(hw) -> tuple[str, float] | None:
    """(name, payload bytes/s one way) of ``hw``'s link to its host: its ``host_link_gbps``; a discrete GPU without
    one, ``ASSUMED_GPU_LINK`` (named as assumed); None for any other part without one."""
    if getattr(hw, "host_link_gbps", 0.0):
        return hw.host_link or "host link", hw.host_link_gbps * 1e9
    if getattr(hw, "kind", "") == "gpu":
        link = get_link(ASSUMED_GPU_LINK)
        return f"{link.name} (assumed: no host link in the catalog for {hw.id})", link.per_direction_bytes_s
    return None


def parse_host_link(text: str, links: list[Link] | None = None) -> tuple[float, str]:
    """Per-direction GB/s of a host-link description, and how it was derived (one line).

    1. "PCIe <gen> x<lanes>": the ``PCIe <gen>.0 x16`` link row scaled by lanes/16.
    2. "<N> GB/s bidir" written in the text: N / 2 (the device's own figure).
    3. A link row whose short name appears in the text (``NVLink-C2C``, ``Thunderbolt 5``).
    Otherwise 0.0 (unknown): no lane count, a link with no row, or "n/a".
    """
    text = text or ""
    links = all_links() if links is None else links
    m = _PCIE.search(text)
    if m:
        gen, lanes = m.group(1), int(m.group(2))
        row = next((l for l in links if l.name.lower() == f"pcie {gen}.0 x16"), None)
        if row is None:
            return 0.0, f"no link row for PCIe {gen}.0"
        gbps = row.per_direction_gbps * lanes / 16
        if lanes == 16:
            return gbps, f"link {row.id}: {row.per_direction_gbps:g} GB/s per direction"
        return gbps, f"link {row.id}: {row.per_direction_gbps:g} GB/s per direction x {lanes}/16 lanes"
    m = _BIDIR.search(text)
    if m:
        bidir = float(m.group(1))
        return bidir / 2, f"the device's own {bidir:g} GB/s bidirectional / 2"
    low = text.lower()
    for row in links:
        if any(a.lower() in low for a in row.aliases if not a.lower().startswith("pcie")):
            return row.per_direction_gbps, f"link {row.id}: {row.per_direction_gbps:g} GB/s per direction"
    return 0.0, "unknown (no lane count or no matching link row)"
