"""The catalog device a free-form name most likely is: a benchmark table's or nvidia-smi's spelling ("NVIDIA H100
80GB HBM3", "NVIDIA B200", "Apple M4 Max (40-core GPU)", "Radeon RX 7900 XTX"), checked against the figures the
table gives beside it.

Exact names, ids and aliases are ``get_hardware``'s (``names.NameIndex``: strict, ambiguous short names refused).
This is for data whose device names no one chose for the catalog -- a calibration row -- where a row left without
its device loses what only the catalog has (the FP32 figure that gives cores x clock, the board power, the GeForce
FP16-accumulate flag) and would be predicted as a different kind of part. A name matches a device when every word
of it, less vendor and filler words and memory sizes ("80GB"), is a word of the device's name, id, aliases or
memory type; a stated bandwidth must agree within ``BANDWIDTH_TOLERANCE``; among several, the stated memory size,
then the closest bandwidth, then catalog order decide; a name without a model number must fit one device alone.

    ``closest_device(name, bandwidth_gbps=0, memory_gb=0)`` -> Hardware | None
"""

from __future__ import annotations

import re
from functools import lru_cache

BANDWIDTH_TOLERANCE = 0.10    # a row's stated GB/s within 10 % of the device's (a Quadro RTX 4000's 416 is not an
                              # RTX 4000 Ada's 360)
FILLER = frozenset("nvidia amd intel apple geforce radeon tesla instinct graphics gpu gpus core cores generation "
                   "edition card the with and".split())


def _words(text: str) -> set[str]:
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", str(text).lower())
    return {w for w in re.findall(r"[a-z0-9+]+", text) if w not in FILLER}


@lru_cache(maxsize=1)
def _bags() -> list[tuple[object, frozenset]]:
    from .catalog import all_hardware
    from .names import name_key

    out = []
    for hw in all_hardware():
        labels = (hw.id, *hw.aliases)
        bag = _words(hw.name) | _words(hw.memory_type) | set().union(*(_words(x.replace("-", " ")) for x in labels))
        bag |= {name_key(x) for x in labels}            # "rtx4090", "h100sxm5": names written without spaces
        out.append((hw, frozenset(bag)))
    return out


def closest_device(name: str, bandwidth_gbps: float = 0.0, memory_gb: float = 0.0):
    """The catalog device ``name`` most likely is (module docstring), or None."""
    words = _words(name)
    sizes = {w for w in words if re.fullmatch(r"\d+gb", w)}
    need = words - sizes
    if not need:
        return None
    found = [hw for hw, bag in _bags() if need <= bag
             and (not bandwidth_gbps or abs(hw.bandwidth_gbps / bandwidth_gbps - 1) <= BANDWIDTH_TOLERANCE)]
    if not found or (len(found) > 1 and not any(ch.isdigit() for w in need for ch in w)):
        return None       # several devices and no model number to tell them apart ("NVIDIA Laptop GPU")
    size = memory_gb or (float(next(iter(sizes))[:-2]) if len(sizes) == 1 else 0.0)
    return min(found, key=lambda hw: (bool(size) and hw.memory_gb != size,
                                      abs(hw.bandwidth_gbps - bandwidth_gbps) if bandwidth_gbps else 0.0))
