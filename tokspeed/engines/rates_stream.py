"""How fast an engine streams bytes from a device's memory: the bytes/s side of an operator's roofline.

``stream_bytes_s(engine, hw, fmt)`` is the rate ``timing.op_time`` divides an operator's bytes by: peak
bandwidth x ``eta_mem`` of the memory technology (``tokspeed.engines.memory``; at most the peak), softly bounded
by what the engine's kernels can issue (``kernel_bytes_s``: cores x clock x ``bytes_per_core_cycle``,
``tokspeed.engines.issue``) and by ``bw_cap_gbps`` where an engine sets one (p-norm soft minimum, p =
CAP_SHARPNESS: a queue saturating rather than a hard wall). ``fmt``: weights of that format, whose ``eta_format``
scales the kernel bound -- dequantising is work on the cores, not on the memory, so a device with core cycles to
spare per byte streams K-quants near its memory's rate and one without slows -- or, for an engine without a
kernel bound, the whole stream (on a device with no known core count, neither: the bound and the format's share
of it are both unknown); None: traffic with no format (activations, KV cache). ``stream_rate`` returns the same
figure with its parts (``Stream``), which ``explain`` prints. The FLOP/s side is ``tokspeed.engines.rates``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..quant.format_key import format_key
from .issue import core_cycles_per_s
from .memory import memory_class
from .rates import soft_min
from .vk_matvec import format_eff_on, path_factor


def kernel_bytes_s(engine, hw) -> float:
    """What the engine's matvec kernels can pull on ``hw`` whatever the memory: cores x clock x
    ``bytes_per_core_cycle`` (``tokspeed.engines.issue``); 0 = no such bound known."""
    return core_cycles_per_s(hw) * engine.bytes_per_core_cycle if engine.bytes_per_core_cycle else 0.0


def stream_bytes_s(engine, hw, fmt=None) -> float:
    """Bandwidth ``engine`` streams ``fmt`` weights at on ``hw`` (None: traffic with no format); the module
    docstring says how."""
    eff = format_eff_on(engine, hw, fmt) if fmt else 1.0
    bw = hw.bandwidth_bytes_s * min(engine.mem_eff_for(hw), 1.0)
    if not engine.bytes_per_core_cycle:         # an engine without a kernel bound: the format costs everywhere
        return soft_min(bw, engine.bw_cap_gbps * 1e9) * eff
    # fitted as a factor on the kernel bound: on a device whose cores are not known (a probed or custom
    # device, no FP32 figure) neither the bound nor the format's share of it is charged
    return soft_min(bw, kernel_bytes_s(engine, hw) * eff, engine.bw_cap_gbps * 1e9)


def weight_reads(engine, op, tokens: int) -> float:
    """How many times a pass reads ``op``'s weights: routed experts under an engine that multiplies each
    (token, expert) pair with its own matrix-vector kernel below ``expert_pairs_below_tokens`` tokens
    (llama.cpp Metal's mul_mv_id) read each touched expert once per pair; otherwise once."""
    if engine.expert_pairs_below_tokens and op.pairs_per_expert and tokens < engine.expert_pairs_below_tokens:
        return op.pairs_per_expert
    return 1.0


@dataclass(frozen=True)
class Stream:
    """``value`` bytes/s and its parts: the memory (``memory`` technology at ``peak`` x ``eta_mem``), the kernel bound
    (``core_cycles`` per second x ``bytes_per_core_cycle`` x the format's ``eta_format`` of ``group`` x that of
    the matrix-vector ``path`` where it has one of its own, ``path_eff``: ``vk_matvec``; 0 = none), the engine's
    cap (0 = none)."""
    fmt: str
    memory: str
    peak: float
    eta_mem: float
    core_cycles: float
    bytes_per_core_cycle: float
    group: str
    eta_format: float
    cap: float
    value: float
    path: str = ""
    path_eff: float = 1.0

    @property
    def kernel(self) -> float:
        return (self.core_cycles * self.bytes_per_core_cycle * self.eta_format * self.path_eff
                if self.bytes_per_core_cycle else 0.0)


def stream_rate(engine, hw, fmt=None) -> Stream:
    """``stream_bytes_s`` with its parts."""
    kern = kernel_bytes_s(engine, hw)
    group_eff = engine.format_eff(fmt) if fmt else 1.0
    path, path_eff = path_factor(engine, hw, fmt) if fmt else ("", 1.0)
    return Stream(str(fmt or ""), memory_class(hw), hw.bandwidth_bytes_s, min(engine.mem_eff_for(hw), 1.0),
                  core_cycles_per_s(hw), engine.bytes_per_core_cycle if kern else 0.0,
                  format_key(fmt).group if fmt else "", group_eff,
                  engine.bw_cap_gbps * 1e9, stream_bytes_s(engine, hw, fmt),
                  path, path_eff)
