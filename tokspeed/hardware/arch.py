"""A device's architecture and matrix units: the accepted words, and the check of a stated value.

Every catalog device states its ``arch`` (the GPU, accelerator or CPU microarchitecture, lower case) and its
``matrix_units`` (the matrix/dot-product units it has), with the vendor whitepaper or data sheet in its sources
(``data/reference/hardware-specs.csv``). A user's hardware file may state both; a file that states no ``arch`` gets
the one its name implies (``tokspeed.hardware.arch_names``), and its ``derived`` list says so. The engine rules read
these fields, never the device's name: ``tokspeed.engines.issue`` (FP32 lanes per core), ``engines.mmq`` (llama.cpp's
MMQ units), ``calibration.families`` (validation families). docs/hardware.md lists the words and what reads them.

    ``ARCHS``: arch -> what it is;  ``MATRIX_UNITS``: unit -> what it is
    ``check_arch(value, where)``, ``check_matrix_units(value, where)`` -> the value, or one UserError
    ``default_matrix_units(arch)`` -> the units every part of that arch has (for a file that states an arch only)
"""

from __future__ import annotations

from ..errors import UserError, did_you_mean

ARCHS: dict[str, str] = {
    # NVIDIA GPUs (compute capability); GP100 and GA100 have their own SM (64 FP32 lanes, no DP4A on GP100)
    "fermi": "NVIDIA Fermi (GF1xx, cc 2.x)",
    "kepler": "NVIDIA Kepler (GK1xx, cc 3.x)",
    "maxwell": "NVIDIA Maxwell (GM1xx/GM20x, cc 5.x)",
    "pascal-gp100": "NVIDIA Pascal GP100 (Tesla P100, Quadro GP100; cc 6.0)",
    "pascal": "NVIDIA Pascal GP102-GP108 (GeForce GTX 10, Tesla P4/P40, Quadro P; cc 6.1/6.2)",
    "volta": "NVIDIA Volta (GV100, Jetson Xavier; cc 7.0/7.2)",
    "turing": "NVIDIA Turing (TU10x/TU11x; cc 7.5)",
    "ampere-ga100": "NVIDIA Ampere GA100 (A100, A800, A30; cc 8.0)",
    "ampere": "NVIDIA Ampere GA10x (GeForce RTX 30, RTX A-series, A40, A10, Jetson Orin; cc 8.6/8.7)",
    "ada": "NVIDIA Ada Lovelace (AD10x; cc 8.9)",
    "hopper": "NVIDIA Hopper (GH100; cc 9.0)",
    "blackwell": "NVIDIA Blackwell (GB100/GB110 cc 10.x, GB20x and GB10 cc 12.x)",
    # AMD GPUs
    "gcn4": "AMD GCN 4 (Polaris: RX 400/500)",
    "gcn5": "AMD GCN 5 (Vega: RX Vega, Radeon VII, Instinct MI25/MI50/MI60; gfx900/gfx906)",
    "cdna": "AMD CDNA (Instinct MI100; gfx908)",
    "cdna2": "AMD CDNA 2 (Instinct MI200; gfx90a)",
    "cdna3": "AMD CDNA 3 (Instinct MI300/MI325; gfx942)",
    "cdna4": "AMD CDNA 4 (Instinct MI350/MI355; gfx950)",
    "rdna1": "AMD RDNA (RX 5000, Radeon PRO W5000; gfx101x)",
    "rdna2": "AMD RDNA 2 (RX 6000, Radeon PRO W6000, Radeon 610M-680M; gfx103x)",
    "rdna3": "AMD RDNA 3 (RX 7000, Radeon PRO W7000, Radeon 740M-780M; gfx110x)",
    "rdna3.5": "AMD RDNA 3.5 (Radeon 880M/890M, 8040S-8060S: Strix Point/Halo; gfx115x)",
    "rdna4": "AMD RDNA 4 (RX 9000, Radeon AI PRO R9700; gfx120x)",
    # Intel GPUs
    "xe-lp": "Intel Xe-LP (Iris Xe, UHD of Tiger/Alder/Raptor Lake; EUs, no Xe-cores)",
    "xe-lpg": "Intel Xe-LPG (Arc graphics of Meteor Lake / Arrow Lake)",
    "xe-hpg": "Intel Xe-HPG (Arc A-series, Arc Pro A, Data Center GPU Flex)",
    "xe-hpc": "Intel Xe-HPC (Data Center GPU Max, Ponte Vecchio)",
    "xe2": "Intel Xe2 (Arc B-series, Arc Pro B, Lunar Lake Arc 130V/140V)",
    "xe3": "Intel Xe3 (Panther Lake Arc B370/B390)",
    # Apple silicon (the GPU and the CPU cluster of one SoC generation)
    **{f"apple-m{n}": f"Apple M{n} family (GPU and CPU cores of that generation)" for n in range(1, 6)},
    # accelerators
    "tpu-v4": "Google TPU v4", "tpu-v5e": "Google TPU v5e", "tpu-v5p": "Google TPU v5p",
    "tpu-v6e": "Google TPU v6e (Trillium)",
    "gaudi2": "Intel Gaudi 2", "gaudi3": "Intel Gaudi 3",
    # CPUs (a CPU row's processor; a SoC's arch is its GPU's)
    "skylake-sp": "Intel Xeon Scalable 1st gen (Skylake-SP)",
    "cascade-lake": "Intel Xeon Scalable 2nd gen (Cascade Lake)",
    "ice-lake-sp": "Intel Xeon Scalable 3rd gen (Ice Lake-SP)",
    "sapphire-rapids": "Intel Xeon 4th gen (Sapphire Rapids)",
    "emerald-rapids": "Intel Xeon 5th gen (Emerald Rapids)",
    "granite-rapids": "Intel Xeon 6 P-core (Granite Rapids)",
    "alder-lake": "Intel Core 12th gen", "raptor-lake": "Intel Core 13th/14th gen",
    "meteor-lake": "Intel Core Ultra 1xx (Meteor Lake)", "lunar-lake": "Intel Core Ultra 2xxV (Lunar Lake)",
    "arrow-lake": "Intel Core Ultra 2xx (Arrow Lake)",
    "zen2": "AMD Zen 2", "zen3": "AMD Zen 3", "zen4": "AMD Zen 4 (Ryzen 7000, EPYC 9004 Genoa)",
    "zen5": "AMD Zen 5 (Ryzen 9000, Ryzen AI 300, EPYC 9005 Turin)",
    "neoverse-n1": "Arm Neoverse N1 (Ampere Altra, Graviton2)", "neoverse-v1": "Arm Neoverse V1 (Graviton3)",
    "neoverse-v2": "Arm Neoverse V2 (NVIDIA Grace, Graviton4)",
    "cortex-a76": "Arm Cortex-A76 (Raspberry Pi 5)", "cortex-a78ae": "Arm Cortex-A78AE (Jetson Orin CPU)",
    "cortex-x925": "Arm Cortex-X925 (GB10 CPU)",
}

MATRIX_UNITS: dict[str, str] = {
    # NVIDIA
    "tensor-fp16": "tensor cores, FP16 inputs (Volta and later)",
    "tensor-bf16": "tensor cores, BF16 inputs (Ampere and later)",
    "tensor-tf32": "tensor cores, TF32 inputs (Ampere and later)",
    "tensor-int8": "tensor cores, INT8 inputs (Turing and later; llama.cpp's MMQ 'mma' path)",
    "tensor-fp8": "tensor cores, FP8 inputs (Ada, Hopper and later)",
    "tensor-fp4": "tensor cores, FP4 inputs (Blackwell)",
    "tensor-fp64": "tensor cores, FP64 (GA100, Hopper, GB100)",
    "dp4a": "4-way int8 dot product into int32 on the vector lanes (NVIDIA cc >= 6.1, AMD, Intel Xe)",
    # AMD
    "mfma": "CDNA matrix cores (MFMA: FP16/BF16/INT8 matrix fused multiply-add)",
    "mfma-fp8": "CDNA 3/4 matrix cores, FP8 inputs",
    "mfma-fp4": "CDNA 4 matrix cores, FP4/FP6 inputs",
    "wmma-fp16": "RDNA 3/4 WMMA, FP16/BF16 inputs (on the shader SIMDs)",
    "wmma-int8": "RDNA 3/4 WMMA, INT8/INT4 inputs",
    "wmma-fp8": "RDNA 4 WMMA, FP8 inputs",
    # Intel
    "xmx": "Intel Xe Matrix Extensions engines (DPAS instruction: FP16/BF16/INT8)",
    # any vendor, through the Vulkan driver
    "coopmat": "Vulkan cooperative matrix (VK_KHR_cooperative_matrix) on the vendor's common drivers "
               "(driver-dependent: some drivers of the same part do not expose it)",
    # Apple
    "apple-simdgroup-matrix": "Metal simdgroup_matrix (8x8 FP16/FP32 tiles on the GPU ALUs; Apple7+ GPUs)",
    # accelerators
    "tpu-mxu": "TPU matrix multiply units (128x128 or 256x256 systolic BF16/INT8)",
    "gaudi-mme": "Gaudi matrix multiplication engines",
    # CPUs
    "avx2": "x86 AVX2 + FMA (256-bit)",
    "avx512": "x86 AVX-512 F (512-bit, or 2 x 256-bit on Zen 4)",
    "avx512-vnni": "x86 AVX-512 VNNI (vpdpbusd: 4 int8 products per 32-bit lane)",
    "avx512-bf16": "x86 AVX-512 BF16 (vdpbf16ps)",
    "avx-vnni": "x86 AVX-VNNI (256-bit vpdpbusd, Alder Lake and later)",
    "amx": "Intel AMX tiles (BF16/INT8; Sapphire Rapids and later; FP16 on Granite Rapids)",
    "neon": "Arm NEON / ASIMD (128-bit)",
    "neon-dotprod": "Arm dot product (sdot/udot: 4 int8 products per 32-bit lane)",
    "i8mm": "Arm int8 matrix multiply (smmla: 2x8 by 8x2 int8 tiles)",
    "sve": "Arm SVE / SVE2",
    "sme": "Arm SME (scalable matrix extension; Apple M4 and later)",
}

# Units every part of an arch has (NVIDIA whitepapers, AMD ISA guides, Intel Xe-HPG/Xe2 briefings, Apple Metal
# feature tables): what a file that states an arch but no units gets. Catalog rows state theirs.
_NV_TC = ("tensor-fp16", "tensor-bf16", "tensor-tf32", "tensor-int8", "dp4a", "coopmat")
ARCH_UNITS: dict[str, tuple[str, ...]] = {
    "pascal": ("dp4a",), "volta": ("tensor-fp16", "dp4a"), "turing": ("tensor-fp16", "tensor-int8", "dp4a", "coopmat"),
    "ampere": _NV_TC, "ampere-ga100": _NV_TC + ("tensor-fp64",),
    "ada": _NV_TC + ("tensor-fp8",), "hopper": _NV_TC + ("tensor-fp8", "tensor-fp64"),
    "blackwell": _NV_TC + ("tensor-fp8", "tensor-fp4"),
    "gcn5": ("dp4a",), "cdna": ("mfma", "dp4a"), "cdna2": ("mfma", "dp4a"), "cdna3": ("mfma", "mfma-fp8", "dp4a"),
    "cdna4": ("mfma", "mfma-fp8", "mfma-fp4", "dp4a"), "rdna2": ("dp4a",),
    "rdna3": ("wmma-fp16", "wmma-int8", "dp4a", "coopmat"), "rdna3.5": ("wmma-fp16", "wmma-int8", "dp4a", "coopmat"),
    "rdna4": ("wmma-fp16", "wmma-int8", "wmma-fp8", "dp4a", "coopmat"),
    "xe-lp": ("dp4a",), "xe-lpg": ("dp4a",), "xe-hpg": ("xmx", "dp4a", "coopmat"), "xe-hpc": ("xmx", "dp4a"),
    "xe2": ("xmx", "dp4a", "coopmat"), "xe3": ("xmx", "dp4a", "coopmat"),
    **{f"apple-m{n}": ("apple-simdgroup-matrix", "neon", "neon-dotprod") for n in (1, 2, 3)},
    **{f"apple-m{n}": ("apple-simdgroup-matrix", "neon", "neon-dotprod", "i8mm", "sme") for n in (4, 5)},
    **{a: ("tpu-mxu",) for a in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e")},
    "gaudi2": ("gaudi-mme",), "gaudi3": ("gaudi-mme",),
    "zen2": ("avx2",), "zen3": ("avx2",), "zen4": ("avx2", "avx512", "avx512-vnni", "avx512-bf16"),
    "zen5": ("avx2", "avx512", "avx512-vnni", "avx512-bf16"),
    "skylake-sp": ("avx2", "avx512"), "cascade-lake": ("avx2", "avx512", "avx512-vnni"),
    "ice-lake-sp": ("avx2", "avx512", "avx512-vnni"),
    "sapphire-rapids": ("avx2", "avx512", "avx512-vnni", "avx512-bf16", "amx"),
    "emerald-rapids": ("avx2", "avx512", "avx512-vnni", "avx512-bf16", "amx"),
    "granite-rapids": ("avx2", "avx512", "avx512-vnni", "avx512-bf16", "amx"),
    "alder-lake": ("avx2", "avx-vnni"), "raptor-lake": ("avx2", "avx-vnni"), "meteor-lake": ("avx2", "avx-vnni"),
    "lunar-lake": ("avx2", "avx-vnni"), "arrow-lake": ("avx2", "avx-vnni"),
    "neoverse-n1": ("neon", "neon-dotprod"), "neoverse-v1": ("neon", "neon-dotprod", "i8mm", "sve"),
    "neoverse-v2": ("neon", "neon-dotprod", "i8mm", "sve"), "cortex-a76": ("neon", "neon-dotprod"),
    "cortex-a78ae": ("neon", "neon-dotprod"), "cortex-x925": ("neon", "neon-dotprod", "i8mm", "sve"),
}


def check_arch(value, where: str) -> str | None:
    """``value`` if it is None or one of ``ARCHS``; else one UserError naming the field and the accepted words."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in ARCHS:
        near = did_you_mean(str(value).lower(), list(ARCHS)) if isinstance(value, str) else None
        raise UserError(f"{where}: arch must be one of {', '.join(ARCHS)}; got {value!r}",
                        near or "see docs/hardware.md, 'Architecture and matrix units'")
    return value


def check_matrix_units(value, where: str) -> tuple[str, ...]:
    """``value`` (a list of ``MATRIX_UNITS`` words, or one ``;``-separated string) as a tuple; else one UserError."""
    items = [x.strip() for x in value.split(";") if x.strip()] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
        raise UserError(f"{where}: matrix_units must be a list of words from {', '.join(MATRIX_UNITS)}; got {value!r}")
    bad = [x for x in items if x not in MATRIX_UNITS]
    if bad:
        raise UserError(f"{where}: matrix_units {', '.join(map(repr, bad))} not known; accepted: "
                        f"{', '.join(MATRIX_UNITS)}", "see docs/hardware.md, 'Architecture and matrix units'")
    return tuple(items)


def default_matrix_units(arch: str | None) -> tuple[str, ...]:
    """The units every part of ``arch`` has; () for an arch without a table entry or for None."""
    return ARCH_UNITS.get(arch or "", ())
