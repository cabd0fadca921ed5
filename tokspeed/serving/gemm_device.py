"""The device as a serving engine computes on it (``gemm_hardware``): the serving simulator's workers and
``predict`` for a fitted server engine (``prediction_setup``) take the same view."""

from __future__ import annotations

from dataclasses import replace

FP8_GEMM_FORMATS = frozenset({"FP8"})


def gemm_hardware(hardware, quant: str | None, engine: str):
    """The device as a serving engine computes on it: an FP8 checkpoint runs W8A8 FP8 GEMMs (activations
    quantized per token: TensorRT-LLM, vLLM's cutlass FP8 kernels, SGLang) at the device's FP8 tensor rate
    where it has one (Hopper, Ada, CDNA3), not at the FP16 rate ``timing`` gives a weight format. llama.cpp
    engines dequantize to FP16 and keep it."""
    from ..engines.compat import runtime_of
    from ..hardware.catalog import get_hardware
    from ..hardware.spec import Hardware
    from ..quant.schemes import canonical

    hw = hardware if isinstance(hardware, Hardware) else get_hardware(hardware)
    fmt = canonical(quant) if quant else ""
    if fmt in FP8_GEMM_FORMATS and hw.fp8_tflops and runtime_of(engine) != "llama.cpp":
        return replace(hw, fp16_tflops=hw.fp8_tflops)
    return hw
