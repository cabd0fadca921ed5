"""Which piece of hardware does an operator's work, and where its bytes live.

Names follow the seeds: the units the engine's kernels run matrix multiplies on (the Rate's ``unit``,
``tokspeed.engines.rates``: tensor cores, INT8 tensor cores under MMQ, CUDA cores under llama.cpp's matrix-vector
kernels), CUDA (vector) cores for norms, RoPE and activations, the CPU for tokenizing, launching kernels, sampling and the loop; weights and the KV cache
live in device memory (HBM/VRAM, unified memory or system RAM), small activations in L2 / on-chip SRAM.
"""

from __future__ import annotations

from ..ledger import Role


def compute_unit(unit: str, hw) -> str:
    """Human name of the unit that executes an op of ledger ``unit`` (vector|memory|cpu). A matmul's or the attention
    core's (ledger ``tensor``) is its Rate's ``unit`` (``tokspeed.engines.rates``): it depends on the engine's
    kernels, the weight format and the tokens in the pass."""
    vendor = hw.vendor.lower()
    if unit == "cpu" or hw.kind == "cpu":
        return "CPU cores (SIMD)" if unit != "cpu" else "CPU"
    if unit == "memory":
        return "load/store units (gather)"
    if vendor == "nvidia":
        return "CUDA cores"
    return "GPU vector ALUs" if hw.kind in ("gpu", "soc") else "vector units"


def device_memory(hw) -> str:
    """Where weights and the KV cache live."""
    kind = hw.memory_type.split(" (")[0].strip()
    mt = f" ({kind})" if kind else ""
    if hw.kind == "cpu":
        return "system RAM" + mt
    if hw.kind == "soc":
        return "unified memory" + mt
    if hw.memory_type.upper().startswith("HBM"):
        return "HBM" + mt
    return "VRAM" + mt


def data_source(op, hw) -> str:
    """Where the bytes an op reads come from: the KV cache for attention, else weights or activations,
    whichever is larger."""
    if op.unit == "cpu":
        if hw.kind == "cpu":
            return "logits in system RAM"
        if hw.kind == "soc":
            return "logits in unified memory (no copy)"
        link = hw.host_link or "the host link"
        return f"logits copied to system RAM over {link}"
    if op.role is Role.EMBED:
        return f"one table row in {device_memory(hw)}"
    if op.role is Role.STATE_SCAN:
        return f"recurrent state in {device_memory(hw)}"
    if op.kv_read_bytes + op.kv_write_bytes > 0:
        main = "KV cache"
    elif op.weight_bytes >= op.act_bytes:
        main = "weights"
    else:
        main = "activations"
    if main == "activations":
        return "activations in L2 / on-chip SRAM" if hw.kind != "cpu" else "activations in CPU caches"
    return f"{main} in {device_memory(hw)}"


def launch_path(hw) -> str:
    """How the CPU hands kernels to the device."""
    vendor = hw.vendor.lower()
    if hw.kind == "cpu":
        return "thread pool (no launches)"
    if vendor == "nvidia":
        return "CUDA stream (driver)"
    if vendor == "apple":
        return "Metal command buffer"
    if vendor == "amd":
        return "HIP/Vulkan queue"
    return "GPU command queue"
