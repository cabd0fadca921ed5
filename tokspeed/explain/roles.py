"""Which piece of hardware does an operator's work, and where its bytes live.

Names follow the seeds: tensor cores for matrix multiplies, CUDA (vector) cores for norms, RoPE and
activations, the CPU for tokenizing, launching kernels, sampling and the loop; weights and the KV cache
live in device memory (HBM/VRAM, unified memory or system RAM), small activations in L2 / on-chip SRAM.
"""

from __future__ import annotations

from ..engines.mmq import has_tensor_cores
from ..ledger import Role


def compute_unit(unit: str, hw, f32: bool = False, dp4a: bool = False) -> str:
    """Human name of the unit that executes an op of ledger ``unit`` (tensor|vector|memory|cpu); ``f32``: the model's
    weights and activations are F32 (its matmuls run on the FP32 units); ``dp4a``: the engine's quantized matmuls run
    as DP4A on the CUDA cores there (``EngineProfile.mmq_unit``)."""
    vendor = hw.vendor.lower()
    if unit == "cpu" or hw.kind == "cpu":
        return "CPU cores (SIMD)" if unit != "cpu" else "CPU"
    if unit == "memory":
        return "load/store units (gather)"
    if unit == "tensor" and dp4a:
        return "CUDA cores (DP4A)"
    if unit == "tensor" and not f32:
        if vendor == "nvidia":     # not before Volta: Pascal multiplies on its CUDA cores (DP4A, half2, FP32)
            return "tensor cores" if has_tensor_cores(hw) else "CUDA cores"
        if vendor == "amd":
            return "matrix cores"
        if vendor == "apple":
            return "GPU matrix units"
        return "matrix units"
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
