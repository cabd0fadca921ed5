"""The architecture a device's name implies, for a device that does not state one (a user's hardware file, a
calibration row of a device the catalog lacks, a probed profile).

Catalog devices state ``arch`` in the reference CSV; this is the fallback, and the entry's ``derived`` list says
the value was read from the name. The patterns are ``archs.toml``'s ``[names]``, checked in order on the lower-cased
name: a name that fits none gets no arch (the engine rules then take their vendor's default).

    ``infer_arch(vendor, kind, name)`` -> an ``ARCHS`` word or None
    ``infer_memory_type(name)`` -> ``"HBM"`` for parts that only ship with HBM, else ""
"""

from __future__ import annotations

import re
from functools import lru_cache

from .arch import name_patterns, pattern_vendors

# parts that ship with HBM only (the memory technology of a device whose entry states none): NVIDIA's data-centre
# parts from P100 and the Volta Titan V / Quadro GV100; every AMD Instinct MI part from MI25 (MI25 .. MI355X: MI25 /
# MI50 / MI60 are Vega HBM2 boards; not the Polaris MI6, GDDR5) and the Vega-era Radeons (Vega 56 / 64, Radeon VII,
# Radeon Pro VII: HBM2; Fury: HBM)
HBM_NAMES = (r"\b(v100|p100|a100|a800|h100|h200|h800|h20|gh200|b100|b200|b300|gb200|gb300|titan v\b|gv100|"
             r"mi\d{2,3}x?|radeon (pro )?vii\b|vega (56|64)|r9 fury|radeon fury|tpu|gaudi)")


@lru_cache(maxsize=1024)
def infer_arch(vendor: str, kind: str, name: str) -> str | None:
    """The arch ``name`` implies for a GPU, SoC or accelerator of ``vendor``; None where it implies none."""
    v, n = (vendor or "").strip().lower(), re.sub(r"\((r|tm)\)", "", (name or "").lower())
    if v.startswith("apple"):
        m = re.search(r"\bm([1-5])\b", n)
        return f"apple-m{m.group(1)}" if m else None
    key = "amd" if v.startswith("advanced micro devices") else next((k for k in pattern_vendors() if v.startswith(k)), "")
    table = name_patterns(key)
    if kind == "cpu":
        return None
    for arch, pattern in table:
        if re.search(pattern, n):
            return arch
    return None


def infer_memory_type(name: str) -> str:
    """``"HBM"`` where ``name`` is a part that ships only with HBM (V100, A100, H100, MI300X, TPU, Gaudi...)."""
    return "HBM" if re.search(HBM_NAMES, (name or "").lower()) else ""
