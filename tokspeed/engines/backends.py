"""Which units a llama.cpp backend's prompt matmuls run on, per GPU architecture: the matrix units the catalog's FP16
figure counts (tensor cores, WMMA/MFMA, XMX) or the vector ALUs.

Read from the kernels (llama.cpp as vendored by llama-cpp-python 0.3.36, ggml/src):

- Vulkan (``ggml-vulkan.cpp``, ``ggml_vk_khr_cooperative_matrix_support``): cooperative-matrix GEMMs on NVIDIA; on
  AMD only RDNA3/RDNA4 (the proprietary AMDVLK and AMD open-source drivers are held to those; RADV exposes
  ``VK_KHR_cooperative_matrix`` on RDNA3+ only, as earlier parts have no WMMA); on Intel only Xe2/Xe3 (Battlemage,
  Lunar Lake) -- "older hardware (ex. Arc A770) has performance regressions" -- and Xe1 iGPUs on the Windows
  driver. Elsewhere the scalar ``mul_mm`` shaders: dequantised tiles multiplied on the vector ALUs.
- ROCm/HIP (the ggml-cuda sources, ``common.cuh``): MMQ on WMMA for RDNA3/RDNA4 (``amd_wmma_available``), on MFMA
  for CDNA (``amd_mfma_available``); GCN (gfx906, MI50/MI60/Radeon VII) and RDNA1/2 have neither: DP4A MMQ and
  hipBLAS on the vector ALUs.
- SYCL (``ggml-sycl``): F16 GEMMs through oneDNN / oneMKL, which run on XMX on Arc (Xe-HPG Alchemist, Xe2); Xe-LP
  integrated graphics have no XMX.
- CUDA and Metal: tensor cores / simdgroup matrices as the catalog counts them (tokspeed.engines.mmq for CUDA's
  MMQ units).

On the vector ALUs the FP16 rate is the FP32 figure times ``VECTOR_FP16_PER_FP32`` (packed half precision: 2 on
AMD GCN/RDNA and Intel Xe, 1 on NVIDIA since Ampere's GA10x). A device's architecture comes from the hardware's
``arch`` field (``tokspeed.hardware.arch``; a hardware file without one gets it from its name there, noted), mapped
to the family the kernels key on (``ARCH_FAMILY``); an architecture the table does not know keeps the catalog's
figure.
"""

from __future__ import annotations

from dataclasses import replace

from .driver import bf16_fallback, gate_matrix_units

# hw.arch (tokspeed.hardware.arch's words) -> the architecture family a backend's kernel choice keys on
ARCH_FAMILY = {
    **{a: "nvidia" for a in ("fermi", "kepler", "maxwell", "pascal-gp100", "pascal", "volta", "turing",
                             "ampere-ga100", "ampere", "ada", "hopper", "blackwell")},
    "gcn4": "gcn", "gcn5": "gcn", "cdna": "cdna", "cdna2": "cdna", "cdna3": "cdna", "cdna4": "cdna",
    "rdna1": "rdna2", "rdna2": "rdna2",            # RDNA1/2: no WMMA, the same vector paths
    "rdna3": "rdna3", "rdna3.5": "rdna3", "rdna4": "rdna4",
    "xe-lp": "xe-lp", "xe-lpg": "xe-lp",           # integrated Xe without XMX
    "xe-hpg": "xe1", "xe2": "xe2", "xe3": "xe2",
}
# (backend, architecture) -> prompt matmuls on the matrix units; a vendor name as architecture covers all its parts
MATRIX_UNITS = {
    ("llama.cpp-vulkan", "nvidia"): True, ("llama.cpp-vulkan", "rdna4"): True, ("llama.cpp-vulkan", "rdna3"): True,
    ("llama.cpp-vulkan", "rdna2"): False, ("llama.cpp-vulkan", "gcn"): False, ("llama.cpp-vulkan", "cdna"): False,
    ("llama.cpp-vulkan", "xe2"): True, ("llama.cpp-vulkan", "xe1"): False, ("llama.cpp-vulkan", "xe-lp"): False,
    ("llama.cpp-rocm", "rdna4"): True, ("llama.cpp-rocm", "rdna3"): True, ("llama.cpp-rocm", "cdna"): True,
    ("llama.cpp-rocm", "gcn"): False, ("llama.cpp-rocm", "rdna2"): False,
    ("llama.cpp-sycl", "xe2"): True, ("llama.cpp-sycl", "xe1"): True, ("llama.cpp-sycl", "xe-lp"): False,
}
VECTOR_FP16_PER_FP32 = {"amd": 2.0, "intel": 2.0, "nvidia": 1.0}


def gpu_arch(hw) -> str:
    """The architecture family a backend's kernel choice keys on, from the hardware's ``arch`` field ("" when the
    device states none or the table has no family for it); NVIDIA parts are "nvidia" (the CUDA/Vulkan choice does
    not depend on the generation here)."""
    return ARCH_FAMILY.get(str(getattr(hw, "arch", "") or "").lower(), "")


def uses_matrix_units(backend: str, hw) -> bool | None:
    """Whether ``backend``'s prompt matmuls run on ``hw``'s matrix units (None: the table does not say)."""
    arch = gpu_arch(hw)
    table = MATRIX_UNITS.get((backend, arch), MATRIX_UNITS.get((backend, (hw.vendor or "").lower())))
    return gate_matrix_units(backend, hw, arch, table)     # the driver's cooperative matrices (engines/driver.py)


def backend_view(backend: str, hw, quant=None):
    """``hw`` as ``backend``'s kernels use it: where its matmuls run on the vector ALUs, the FP16 figure is the vector
    rate (FP32 x packed-half factor), not the matrix units' (idempotent: a view of a view is the same). ``quant``:
    BF16 weights under a driver without BF16 cooperative matrices run FP32 math (engines/driver.py)."""
    if hw.kind in ("gpu", "soc") and hw.fp32_tflops and bf16_fallback(backend, hw, gpu_arch(hw), quant):
        return replace(hw, fp16_tflops=min(hw.fp16_tflops or hw.fp32_tflops, hw.fp32_tflops), fp16_accumulate_2x=False)
    if hw.kind not in ("gpu", "soc") or not hw.fp32_tflops or uses_matrix_units(backend, hw) is not False:
        return hw
    vector = hw.fp32_tflops * VECTOR_FP16_PER_FP32.get((hw.vendor or "").lower(), 1.0)
    if not hw.fp16_tflops or hw.fp16_tflops <= vector:
        return hw
    return replace(hw, fp16_tflops=vector, fp16_accumulate_2x=False)
