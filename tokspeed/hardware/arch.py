"""A device's architecture and matrix units: the accepted words, and the check of a stated value.

Every catalog device states its ``arch`` (the GPU, accelerator or CPU microarchitecture, lower case) and its
``matrix_units`` (the matrix/dot-product units it has), with the vendor whitepaper or data sheet in its sources
(``data/reference/hardware-specs.csv``). A user's hardware file may state both; a file that states no ``arch`` gets
the one its name implies (``tokspeed.hardware.arch_names``), and its ``derived`` list says so. The engine rules read
these fields, never the device's name: ``tokspeed.engines.issue`` (FP32 lanes per core), ``engines.mmq`` (llama.cpp's
MMQ units), ``calibration.families`` (validation families). docs/hardware.md lists the words and what reads them.

The words, their units and what the engine rules read of them (FP32 lanes, Vulkan family, validation family, name
patterns) are rows of ``archs.toml``; this module reads it.

    ``ARCHS``: arch -> what it is;  ``MATRIX_UNITS``: unit -> what it is
    ``check_arch(value, where)``, ``check_matrix_units(value, where)`` -> the value, or one UserError
    ``default_matrix_units(arch)`` -> the units every part of that arch has (for a file that states an arch only)
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import UserError, did_you_mean

TABLE = Path(__file__).with_name("archs.toml")
_DATA = tomllib.loads(TABLE.read_text())

ARCHS: dict[str, str] = {a: row["what"] for a, row in _DATA["arch"].items()}
MATRIX_UNITS: dict[str, str] = dict(_DATA["unit"])
ARCH_UNITS: dict[str, tuple[str, ...]] = {a: tuple(row["units"]) for a, row in _DATA["arch"].items() if "units" in row}


def arch_row(arch: str | None) -> dict:
    """The table row of an arch word ({} for None or a word the table lacks)."""
    return _DATA["arch"].get(str(arch or "").lower(), {})


def arch_fp32_lanes(arch: str | None) -> int:
    """FP32 lanes of one GPU core of ``arch`` (0: not listed, no kernel-issue bound)."""
    return int(arch_row(arch).get("fp32_lanes_per_core", 0))


def vulkan_family(arch: str | None) -> str:
    """The architecture family drivers.toml keys a Vulkan driver's features on ("" for none)."""
    return arch_row(arch).get("vulkan_family", "")


def vulkan_fa_coopmat1(family: str) -> bool:
    """ggml-vulkan's coopmat1 FlashAttention runs on this Vulkan family (its 16x16x16 F32-accumulator shape)."""
    return bool(_DATA["vulkan_family"].get(family, {}).get("fa_coopmat1", False))


def validation_family(arch: str | None) -> str:
    """The family leave-one-family-out validation holds ``arch`` out with ("" for none)."""
    return arch_row(arch).get("validation_family", "")


def kernel_units() -> dict[str, tuple[str, ...]]:
    """Backend -> the matrix units its prompt GEMMs run on, any one of them."""
    return {b: tuple(u) for b, u in _DATA["kernel_units"].items()}


def pattern_vendors() -> tuple[str, ...]:
    """The vendors ``[names]`` has patterns for."""
    return tuple(_DATA["names"])


def name_patterns(vendor: str) -> list[tuple[str, str]]:
    """(arch, regex) in the order a device name is checked against them, for one vendor ([] for another)."""
    return [(a, pattern) for a, pattern in _DATA["names"].get(vendor, [])]


def check_arch(value, where: str) -> str | None:
    """``value`` if it is None or one of ``ARCHS``; else one UserError naming the field and the accepted words."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in ARCHS:
        near = did_you_mean(str(value).lower(), list(ARCHS)) if isinstance(value, str) else None
        raise UserError(f"{where}: arch must be one of {', '.join(ARCHS)}; got {value!r}",
                        near or "see docs/hardware.md, 'Architecture and matrix units'")
    return value


def check_matrix_units(value, where: str) -> tuple[str, ...]:
    """``value`` (a list of ``MATRIX_UNITS`` words, or one ``;``-separated string) as a tuple; else one UserError."""
    items = [x.strip() for x in value.split(";") if x.strip()] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
        raise UserError(f"{where}: matrix_units must be a list of words from {', '.join(MATRIX_UNITS)}; got {value!r}")
    bad = [x for x in items if x not in MATRIX_UNITS]
    if bad:
        raise UserError(f"{where}: matrix_units {', '.join(map(repr, bad))} not known; accepted: "
                        f"{', '.join(MATRIX_UNITS)}", "see docs/hardware.md, 'Architecture and matrix units'")
    return tuple(items)


def default_matrix_units(arch: str | None) -> tuple[str, ...]:
    """The units every part of ``arch`` has; () for an arch without a table entry or for None."""
    return ARCH_UNITS.get(arch or "", ())
