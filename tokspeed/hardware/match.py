"""The catalog device a free-form name most likely is: a benchmark table's or nvidia-smi's spelling ("NVIDIA H100
80GB HBM3", "NVIDIA B200", "Apple M4 Max (40-core GPU)", "Radeon RX 7900 XTX"), checked against the figures the
table gives beside it.

Exact names, ids and aliases are ``get_hardware``'s (``names.NameIndex``: strict, ambiguous short names refused).
This is for data whose device names no one chose for the catalog -- a calibration row -- where a row left without
its device loses what only the catalog has (the FP32 figure that gives cores x clock, the board power, the GeForce
FP16-accumulate flag) and would be predicted as a different kind of part. A name matches a device when every word
of it, less vendor and filler words and memory sizes ("80GB"), is a word of the device's name, id, aliases or
memory type; a stated bandwidth must agree within ``BANDWIDTH_TOLERANCE``; among several, the one whose own name adds
fewest words (an unstated variant's entry where the name states none), the stated memory size, then the closest
bandwidth, then catalog order decide; a name without a model number must fit one device alone, and a
device whose name has a word that makes another product of the number (Ti, XT, SUPER, Max, Ada...) must have it in
the name too.

    ``closest_device(name, bandwidth_gbps=0, memory_gb=0)`` -> Hardware | None
    ``closest_devices(name, ...)`` -> every candidate, most likely first
"""

from __future__ import annotations

import re
from functools import lru_cache

from .devices import all_hardware
from .names import name_key

BANDWIDTH_TOLERANCE = 0.10    # a row's stated GB/s within 10 % of the device's (a Quadro RTX 4000's 416 is not an
                              # RTX 4000 Ada's 360)
FILLER = frozenset("nvidia amd intel apple geforce radeon tesla instinct graphics gpu gpus core cores generation "
                   "edition card the with and".split())
# words that make another product of the same number: a name without them is not that device ("RTX 3080 12GB" is no
# RTX 3080 Ti, "RX 6800" no RX 6800 XT, "NVIDIA RTX 6000" -- Turing -- no RTX 6000 Ada)
SKU_WORDS = frozenset("ti xt xtx super gre laptop mobile max pro ultra ada mini nano d".split())


def _words(text: str) -> set[str]:
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", str(text).lower())
    return {w for w in re.findall(r"[a-z0-9+]+", text) if w not in FILLER}


@lru_cache(maxsize=1)
def _bags() -> list[tuple[object, frozenset, frozenset]]:
    """(device, every word it answers to, the SKU words of its name)."""
    out = []
    for hw in all_hardware():
        labels = (hw.id, *hw.aliases)
        bag = _words(hw.name) | _words(hw.memory_type) | set().union(*(_words(x.replace("-", " ")) for x in labels))
        bag |= {name_key(x) for x in labels}            # "rtx4090", "h100sxm5": names written without spaces
        out.append((hw, frozenset(bag), frozenset(_words(hw.name) & SKU_WORDS)))
    return out


def closest_devices(name: str, bandwidth_gbps: float = 0.0, memory_gb: float = 0.0) -> list:
    """The catalog devices ``name`` may be, most likely first (module docstring); [] for none."""
    words = _words(name)
    sizes = {w for w in words if re.fullmatch(r"\d+gb", w)}
    need = words - sizes
    if not need:
        return []
    size = float(next(iter(sizes))[:-2]) if len(sizes) == 1 else 0.0
    found = [hw for hw, bag, sku in _bags() if need <= bag and sku <= need
             and (not bandwidth_gbps or abs(hw.bandwidth_gbps / bandwidth_gbps - 1) <= BANDWIDTH_TOLERANCE)
             # a size in the name is the product's (A100 40GB, Jetson AGX Orin 32GB): a GPU or NVIDIA module of another
             # size is not it (an Apple chip's is the machine's RAM)
             and not (size and (hw.kind in ("gpu", "accelerator") or hw.vendor == "NVIDIA") and hw.memory_gb != size)]
    if len(found) > 1 and not any(ch.isdigit() for w in need for ch in w):
        return []         # several devices and no model number to tell them apart ("NVIDIA Laptop GPU")
    size = size or memory_gb

    def extra(hw) -> int:     # words of its name the query lacks; an unstated variant's "(SXM4/PCIe unstated)" none
        named = re.sub(r"\([^)]*unstated\)", "", hw.name, flags=re.I)
        return len(_words(named) - words)

    # the fewest words of its own name missing (the entry for an unstated variant where the name states none), a
    # stated variant over the unstated entry, then the memory size, then the bandwidth
    return sorted(found, key=lambda hw: (extra(hw), "unstated" in hw.name.lower(), bool(size) and hw.memory_gb != size,
                                         abs(hw.bandwidth_gbps - bandwidth_gbps) if bandwidth_gbps else 0.0))


def closest_device(name: str, bandwidth_gbps: float = 0.0, memory_gb: float = 0.0):
    """The catalog device ``name`` most likely is, or None: the first of ``closest_devices``. Where variants of one
    product tie (H200 SXM and NVL at 4,800 GB/s), catalog order decides: a guess, which a calibration row still
    prefers to no device at all (it would lose its core cycles and board power); ``get_hardware``'s hint names them
    all instead."""
    found = closest_devices(name, bandwidth_gbps, memory_gb)
    return found[0] if found else None
