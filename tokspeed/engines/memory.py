"""Memory technology of a device, the key of an engine's achievable-bandwidth fraction (``eta_mem``).

What a decode kernel pulls from memory is bounded by Little's law: bandwidth <= bytes in flight /
latency. The technologies differ in both: HBM is wide and slow per pin (thousands of pins at 2-9 Gb/s,
loaded latency ~500-600 ns on A100/H100), so it needs several times the bytes in flight that a GDDR6X/7
card of half the bandwidth needs; LPDDR unified memory is shared by CPU and GPU behind a system-level
cache; DDR sits behind a CPU's memory controllers. A single fraction per technology, fitted on the
calibration rows of that technology, transfers to the other parts built on it (HBM: A100 -> H100, H200,
B200; GDDR: Ampere/Ada -> Blackwell GeForce), and keeps a part with more bandwidth of the same technology
faster, which one GB/s ceiling for all devices did not. The other side of Little's law -- how many
bytes the kernel keeps in flight, which grows with the device's cores and clock -- is the kernel bound
of ``tokspeed.engines.issue``; the two meet in ``EngineProfile.stream_bytes_s``.

    ``memory_class(hw)`` -> ``hbm`` | ``gddr`` | ``lpddr`` | ``ddr``
"""

from __future__ import annotations

MEMORY_CLASSES = ("hbm", "gddr", "lpddr", "ddr")


def memory_class(hw) -> str:
    """The memory technology of ``hw`` from its ``memory_type`` (``HBM3e``, ``GDDR6X``,
    ``LPDDR5X-8533``, ``DDR5 RDIMM``...), else from its kind (soc: lpddr, cpu: ddr, accelerator: hbm, gpu: gddr).
    A GPU whose file states no memory type but whose name is an HBM-only part has ``memory_type = "HBM"`` from
    ``tokspeed.hardware.arch_names.infer_memory_type`` (its ``derived`` list says so): no name is read here."""
    t = (getattr(hw, "memory_type", "") or "").upper()
    if "HBM" in t:
        return "hbm"
    if "GDDR" in t:
        return "gddr"
    if "LPDDR" in t or "UNIFIED" in t:
        return "lpddr"
    if "DDR" in t or "DIMM" in t:
        return "ddr"
    if hw.kind == "soc":
        return "lpddr"
    if hw.kind == "cpu":
        return "ddr"
    if hw.kind == "accelerator":
        return "hbm"
    return "gddr"
