"""The device as a serving engine computes on it (``gemm_hardware``): the serving simulator's workers and
``predict`` for a fitted server engine (``prediction_setup``) take the same view.

The tensor-core path a server engine's GEMMs take (``gemm_path``), by weight format and the device's matrix units
(``Hardware.matrix_units``, never its name):

- ``w8a8-fp8``: an FP8 checkpoint on FP8 units (Ada, Hopper, Blackwell, CDNA3/4): activations quantized per
  token, the GEMM at the FP8 peak (TensorRT-LLM, vLLM's cutlass FP8 kernels, SGLang).
- ``w4a4-fp4``: NVFP4 on Blackwell FP4 tensor cores (TensorRT-LLM, vLLM and SGLang's cutlass / trtllm-gen NVFP4
  GEMMs), MXFP4 on CDNA4's FP4 matrix cores (AMD's MXFP4 kernels for MI355X): the GEMM at the FP4 peak.
- ``w4a8-mxfp4``: MXFP4 on Blackwell: the weights stay 4-bit, activations run as MXFP8 (TensorRT-LLM's and
  FlashInfer's trtllm-gen MoE for gpt-oss; vLLM ``model_executor/layers/quantization/mxfp4.py``, v0.11-0.13:
  SM100 takes the FlashInfer MXFP4 x MXFP8 path): the FP8 peak.
- ``w4a16``: a 4-bit format on a part without FP4 units (Hopper: Marlin / Triton ``matmul_ogs`` kernels dequantize
  to BF16 in registers): the 16-bit peak, the bytes of the 4-bit weights (``timing``).
llama.cpp engines dequantize to FP16 and keep the device as it is.

The FP4 peaks (dense, per GPU; ``fp4_peaks.toml``) are the vendors' figures; a part with FP4 units the table lacks
takes twice its FP8 peak, the ratio every listed Blackwell (B200, GB200) and CDNA4 (MI355X) data sheet gives.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from ..engines.compat import runtime_of
from ..hardware.catalog import get_hardware
from ..hardware.spec import Hardware
from ..quant.format_table import gemm_kind
from ..quant.schemes import canonical

FP4_UNITS = frozenset({"tensor-fp4", "mfma-fp4"})
FP8_UNITS = frozenset({"tensor-fp8", "mfma-fp8", "wmma-fp8"})

PEAKS = Path(__file__).parent / "fp4_peaks.toml"     # dense FP4 TFLOPS per GPU, each with its source


@lru_cache(maxsize=1)
def _fp4_table() -> dict:
    with open(PEAKS, "rb") as f:
        return tomllib.load(f)


def gemm_path(hw, quant: str | None, engine: str) -> str:
    """The tensor-core path of a server engine's GEMMs for weights in ``quant`` on ``hw`` (module docstring);
    ``native``: the device's 16-bit path (llama.cpp engines, 16-bit weights, a part without the units)."""
    kind = gemm_kind(canonical(quant)) if quant else ""
    units = set(getattr(hw, "matrix_units", ()) or ())
    if runtime_of(engine) == "llama.cpp" or not kind:
        return "native"
    if kind == "w8a8-fp8":
        return "w8a8-fp8" if hw.fp8_tflops else "native"
    if not units & FP4_UNITS:
        return "w4a16"
    return "w4a8-mxfp4" if kind == "mx-fp4" and "tensor-fp4" in units else "w4a4-fp4"


def fp4_tflops(hw) -> float:
    """Dense FP4 peak of ``hw`` (``fp4_peaks.toml``, else 2 x its FP8 peak where it has FP4 units; 0 without)."""
    row = _fp4_table().get(hw.id)
    if row:
        return float(row["tflops"])
    units = set(getattr(hw, "matrix_units", ()) or ())
    return 2.0 * hw.fp8_tflops if units & FP4_UNITS else 0.0


def gemm_hardware(hardware, quant: str | None, engine: str):
    """The device as a serving engine computes on it: its matrix peak set to the one of its GEMM path
    (``gemm_path``): FP8 for W8A8 FP8 and W4A8 MXFP4, FP4 for W4A4; the 16-bit peak otherwise."""
    hw = hardware if isinstance(hardware, Hardware) else get_hardware(hardware)
    path = gemm_path(hw, quant, engine)
    if path in ("w8a8-fp8", "w4a8-mxfp4") and hw.fp8_tflops:
        return replace(hw, fp16_tflops=hw.fp8_tflops)
    if path == "w4a4-fp4" and fp4_tflops(hw):
        return replace(hw, fp16_tflops=fp4_tflops(hw))
    return hw
