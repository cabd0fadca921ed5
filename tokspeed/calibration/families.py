"""Device families for leave-one-family-out validation, from the device's architecture.

NVIDIA by GPU architecture (Pascal ... Blackwell), Apple by SoC generation (M1 ... M5), other vendors by vendor
name. A family groups devices that share kernels' behaviour (tensor core generation, cache sizes, memory
controller), so holding one out tests transfer to unseen hardware. The architecture is the catalog entry's
``arch`` for a name the catalog knows, else what the name implies (``tokspeed.hardware.arch_names``).
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import UserError
from ..hardware.arch import validation_family
from ..hardware.arch_names import infer_arch
from ..hardware.catalog import get_hardware

def device_family(name: str, vendor: str) -> str:
    """Family of a device: ``NVIDIA Ampere``, ``Apple M2``, ``AMD``... (``<vendor> other`` if unknown)."""
    v = vendor.strip()
    if v.lower() == "nvidia":
        return "NVIDIA " + (validation_family(_arch(name, v)) or "other")
    if v.lower() == "apple":
        arch = _arch(name, v) or ""
        return f"Apple M{arch[len('apple-m'):]}" if arch.startswith("apple-m") else "Apple other"
    return v or "unknown"


@lru_cache(maxsize=1024)
def _arch(name: str, vendor: str) -> str | None:
    """The ``arch`` of the catalog device called ``name``, else the one the name implies."""
    try:
        hw = get_hardware(name)
    except UserError:
        return infer_arch(vendor, "gpu", name)
    return hw.arch if hw.vendor.lower() == vendor.lower() else infer_arch(vendor, "gpu", name)
