"""Which matrix-vector shaders ggml-vulkan multiplies one token's quantized weights with under a driver, and the
weight-stream factor that path takes (``format_eff_on``).

ggml-vulkan has two: DMMV (``mul_mat_vec_<type>_f32``: dequantise each block and multiply by the F32 activations)
and, where the driver exposes integer dot products, MMVQ (quantise the activations to Q8_1 first, then
``mul_mat_vec_<type>_q8_1_f32``: 4 x 8-bit dot products). ``ggml_vk_should_use_mmvq`` (llama-cpp-python 0.3.17's copy,
2026-03) picks per vendor. On Intel: never under the Windows driver (issue 17628: "MMVQ performance is worse than
fp16"), never for k < 2048, never for Q4_0 / Q5_1 ("from tests on A770 Linux") nor Q3_K / Q6_K (any vendor: "2-byte
alignment"), else yes; and ``ggml_vk_get_dequantize_mul_mat_vec`` runs Intel's Q8_1 shaders in subgroup-sized
workgroups (``DMMV_WG_SIZE_SUBGROUP``) where its DMMV shaders take the large ones (m <= 8192, k >= 1024; AMD's
take the subgroup size for both, NVIDIA's the large ones for DMMV). Which types a driver sends
down this path is data: drivers.toml ``mmvq_subgroup`` (the types with Q8_1 shaders, less the exceptions), listed
on Mesa ANV only (the Windows driver has none). ``mul_mat_vec_id`` (routed experts) takes the same test.

The path streams the weights at a factor of its own on the kernel bound, ``eta_format[MMVQ_SUBGROUP]``
(``rates_stream``), times the format group's: fitted where decode rows run it (scripts/fit_calibration.py), 1 (the
group's factor alone) under the priors. Before it had one, a single K-quant factor fitted mostly on the Arc Pro
B70's MMVQ rows (0.37) slowed every Vulkan device's K-quant decode, NVIDIA's and AMD's DMMV too (an RTX 3090's
Llama 3.1 8B Q4_K_M 75 tok/s against CUDA's 133).

Not modelled: the k < 2048 rule (the attention projections of a model narrower than 2,048 take DMMV: Qwen2.5
0.5B / 1.5B; the path is decided per format, not per matrix); AMD's and NVIDIA's MMVQ (k >= 2048 on AMD, k > 4096
on NVIDIA): the group's factor alone, as before (the R9700's K-quant rows fit within it).
"""

from __future__ import annotations

from functools import lru_cache

from .cpu_kernels import before, ggml_type
from .driver import api_of, entry, features, driver_family, resolve

MMVQ_SUBGROUP = "mmvq-subgroup"     # eta_format key: the Q8_1 matrix-vector shaders in subgroup-sized workgroups
# ASSUMED: the Vulkan MMVQ shaders are absent from llama-cpp-python 0.3.16's copy (llama.cpp of 2025-08-14) and in
# 0.3.17's (2026-03); the month between is not pinned (no row of calibration*.csv falls in it)
MMVQ_SINCE = "2025-10"


@lru_cache(maxsize=512)
def runs_mmvq_subgroup(backend: str, hw, fmt, month: str = "") -> bool:
    """Whether ``backend`` (a Vulkan one) built in ``month`` ("" = today's) multiplies one token by ``fmt`` weights on
    ``hw`` with the Q8_1 matrix-vector shaders in subgroup-sized workgroups (module docstring)."""
    if not fmt or api_of(backend) != "vulkan" or before(month, MMVQ_SINCE):
        return False
    d = resolve(backend, hw)
    types = entry(d.name).get("mmvq_subgroup", []) if d is not None else []
    if not types or ggml_type(fmt) not in types:
        return False
    f = features(d, driver_family(hw))
    return f is not None and f.integer_dot


def path_factor(engine, hw, fmt) -> tuple[str, float]:
    """(key, factor) of the matrix-vector path ``fmt`` weights take on ``hw`` under ``engine`` where that path has a
    factor of its own in the engine's ``eta_format`` (``MMVQ_SUBGROUP``), else ("", 1.0)."""
    if MMVQ_SUBGROUP in engine.eta_format and runs_mmvq_subgroup(engine.name, hw, fmt,
                                                                 getattr(engine, "build_month", "")):
        return MMVQ_SUBGROUP, engine.eta_format[MMVQ_SUBGROUP]
    return "", 1.0


def format_eff_on(engine, hw, fmt) -> float:
    """``engine``'s weight-stream factor for ``fmt`` on ``hw``: its format group's ``eta_format`` times its
    matrix-vector path's (``path_factor``)."""
    return engine.format_eff(fmt) * path_factor(engine, hw, fmt)[1]
