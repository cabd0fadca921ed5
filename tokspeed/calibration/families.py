"""Device families for leave-one-family-out validation, derived from the device name alone.

NVIDIA by GPU architecture (Pascal ... Blackwell), Apple by SoC generation (M1 ... M4), other
vendors by vendor name. A family groups devices that share kernels' behaviour (tensor core
generation, cache sizes, memory controller), so holding one out tests transfer to unseen hardware.
"""

from __future__ import annotations

import re

# (architecture, name patterns) checked in order on the lower-cased name; Ada first so that
# "RTX 5000 Ada Generation" is not taken for a GeForce RTX 50x0 (Blackwell).
NVIDIA_ARCH = [
    ("Ada", [r"rtx 40\d0", r"\bada\b", r"\bl40s?\b", r"\bl4\b", r"\bl20\b"]),
    ("Blackwell", [r"rtx 50\d0", r"\bb[12]00\b", r"\bgb[23]00\b", r"blackwell", r"rtx pro \d+"]),
    ("Hopper", [r"\bh100\b", r"\bh200\b", r"\bh800\b", r"\bgh200\b", r"\bh20\b"]),
    ("Ampere", [r"rtx 30\d0", r"\ba100\b", r"\ba800\b", r"rtx a\d000", r"\ba40\b", r"\ba30\b", r"\ba10g?\b",
                r"\ba16\b", r"\ba2\b", r"jetson (agx )?orin", r"orin"]),
    ("Turing", [r"rtx 20\d0", r"gtx 16\d0", r"\bt4\b", r"quadro rtx", r"titan rtx"]),
    ("Volta", [r"\bv100\b", r"titan v\b", r"jetson (agx )?xavier"]),
    ("Pascal", [r"gtx 10\d0", r"\bp100\b", r"\bp40\b", r"\bp4\b", r"titan xp?\b"]),
]


def device_family(name: str, vendor: str) -> str:
    """Family of a device: ``NVIDIA Ampere``, ``Apple M2``, ``AMD``... (``<vendor> other`` if unknown)."""
    n = name.lower()
    v = vendor.strip()
    if v.lower() == "nvidia":
        for arch, pats in NVIDIA_ARCH:
            if any(re.search(p, n) for p in pats):
                return f"NVIDIA {arch}"
        return "NVIDIA other"
    if v.lower() == "apple":
        m = re.search(r"\bm(\d)\b", n)
        return f"Apple M{m.group(1)}" if m else "Apple other"
    return v or "unknown"
