"""The architecture a device's name implies, for a device that does not state one (a user's hardware file, a
calibration row of a device the catalog lacks, a probed profile).

Catalog devices state ``arch`` in the reference CSV; this is the fallback, and the entry's ``derived`` list says
the value was read from the name. The tables are the name patterns the engine rules used before the architecture
became data (``engines/issue.py``, ``engines/mmq.py``, ``engines/memory.py``, ``calibration/families.py``),
in one place, checked in order on the lower-cased name: a name that fits none gets no arch (the engine rules then
take their vendor's default, as before).

    ``infer_arch(vendor, kind, name)`` -> an ``ARCHS`` word or None
    ``infer_memory_type(name)`` -> ``"HBM"`` for parts that only ship with HBM, else ""
"""

from __future__ import annotations

import re
from functools import lru_cache

# NVIDIA, in order: Kepler/Maxwell first ("GeForce GTX TITAN X" is Maxwell, "TITAN X (Pascal)" GP102), Ada before
# Blackwell ("RTX 5000 Ada Generation" is no GeForce RTX 50x0) and Turing ("RTX 2000 Ada" is no GeForce RTX 20x0)
NVIDIA = [
    ("maxwell", r"\b(gtx titan x|gtx 750|gtx 9\d0m?|9[1-4]0mx?|mx1[13]0|tesla m\d+\w*|quadro m\d+\w*|m40|m60|"
                r"jetson (nano|tx1))\b"),
    ("fermi", r"\bgtx [45]\d0m?\b"),
    ("kepler", r"\b(gtx titan|gtx [6-8]\d0m?|gt [67]\d0|tesla k\d+\w*|quadro k\d+\w*|k80)\b"),
    ("ada", r"rtx 40\d0|\bada\b|\bl40s?\b|\bl4\b|\bl20\b"),
    ("blackwell", r"rtx 50\d0|\bb[123]00\b|\bgb[23]00\b|\bgb10\b|blackwell|rtx pro \d+"),
    ("pascal-gp100", r"\b(p100|gp100)\b"),
    ("pascal", r"\b((?<!gtx )titan xp?|gtx 10\d0|gt 10[13]0|mx(15|2[35]|3[35])0|tesla p[46]|p40|p4|p6|p10[246]-\d+|"
               r"quadro p\d+|jetson tx2)\b"),
    ("volta", r"\b(v100s?|gv100|titan v|jetson (agx )?xavier|xavier)\b"),
    ("turing", r"\b(t4|t400|t600|t1000|t1200|t2000|rtx 20\d0|gtx 16\d0|titan rtx|quadro rtx)\b"),
    ("ampere-ga100", r"\b(a100|a800|a30)\b"),
    ("hopper", r"\b(h100|h200|h800|gh200|h20)\b"),
    ("ampere", r"rtx 30\d0|rtx a\d000|\ba40\b|\ba10g?\b|\ba16\b|\ba2\b|orin"),
]
# AMD, in order: the 128-lane parts first ("ASUS ROG Strix" boards are named "strix" too, hence "strix halo/point")
AMD = [
    ("cdna4", r"\bmi35\d"),
    ("cdna3", r"\bmi3\d\d[ax]?"),
    ("rdna3.5", r"\bradeon 8[4-9]0m|\bradeon 80[4-6]0s|ryzen ai max|strix (halo|point)"),
    ("rdna3", r"\brx 7\d\d\d|\bradeon (pro )?w7\d\d\d|\bpro v7\d\d|\bradeon 7[468]0m"),
    ("rdna4", r"\brx 9\d\d\d|\bai pro r9\d\d\d"),
    ("gcn5", r"\b(mi25|mi50|mi60|radeon (pro )?vii|vega)"),
    ("cdna", r"\bmi100"),
    ("cdna2", r"\bmi2\d\dx?"),
    ("gcn4", r"\brx [456]\d\d\b"),
    ("rdna1", r"\brx 5\d\d\d|\bradeon (pro )?w5\d\d\d"),
    ("rdna2", r"\brx 6\d\d\d|\bradeon (pro )?w6\d\d\d|\bradeon 6[1-8]0m"),
]
INTEL = [
    ("xe-hpg", r"\bflex 1[47]0\b"),
    ("xe-hpc", r"\bdata center gpu\b|\bmax 1[15]\d0\b"),
    ("xe3", r"\barc b3\d0\b"),
    ("xe2", r"\barc (pro )?b\d+|\barc 1[34]0v\b|lunar lake"),
    ("xe-hpg", r"\barc (pro )?a\d+"),
    ("xe-lpg", r"\barc 1[34]0t\b|\barc graphics\b|meteor lake|arrow lake"),
    ("xe-lp", r"\biris xe\b"),
    ("gaudi3", r"gaudi ?3"), ("gaudi2", r"gaudi ?2"),
]
GOOGLE = [("tpu-v6e", r"v6e|trillium"), ("tpu-v5p", r"v5p"), ("tpu-v5e", r"v5e"), ("tpu-v4", r"tpu v4")]
# parts that ship with HBM only (the memory technology of a device whose entry states none)
HBM_NAMES = r"\b(v100|p100|a100|a800|h100|h200|h800|h20|gh200|b100|b200|b300|gb200|gb300|mi\d{3}x?|tpu|gaudi)"


@lru_cache(maxsize=1024)
def infer_arch(vendor: str, kind: str, name: str) -> str | None:
    """The arch ``name`` implies for a GPU, SoC or accelerator of ``vendor``; None where it implies none."""
    v, n = (vendor or "").strip().lower(), re.sub(r"\((r|tm)\)", "", (name or "").lower())
    if v.startswith("apple"):
        m = re.search(r"\bm([1-5])\b", n)
        return f"apple-m{m.group(1)}" if m else None
    table = (NVIDIA if v.startswith("nvidia") else AMD if v.startswith(("amd", "advanced micro devices"))
             else INTEL if v.startswith("intel") else GOOGLE if v.startswith("google") else [])
    if kind == "cpu":
        return None
    for arch, pattern in table:
        if re.search(pattern, n):
            return arch
    return None


def infer_memory_type(name: str) -> str:
    """``"HBM"`` where ``name`` is a part that ships only with HBM (V100, A100, H100, MI300X, TPU, Gaudi...)."""
    return "HBM" if re.search(HBM_NAMES, (name or "").lower()) else ""
