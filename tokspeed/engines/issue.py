"""Core cycles per second of a device: the rate at which an engine's decode kernels can issue loads.

A matrix-vector kernel that streams weights keeps a bounded number of loads in flight per GPU core
(NVIDIA SM, Apple GPU core, AMD compute unit, Intel Xe-core): each resident thread issues its loads,
waits for the memory latency, dequantises and accumulates, then issues the next. What it pulls is
therefore bounded twice:

- by the memory: ``bandwidth x eta_mem`` (the technology's achievable fraction, ``memory.py``);
- by the kernel: ``cores x clock x bytes_per_core_cycle`` (Little's law with the in-flight bytes and the
  per-byte instruction work of the kernel folded into one figure per engine era, fitted on calibration rows).

The second bound is why an A100 (108 SMs at 1.41 GHz) decodes no faster than an RTX 4090 (128 SMs at
2.52 GHz) under llama.cpp though it has twice the bandwidth, and why an H100 or a B200 gains with its
SM count and clock rather than in proportion to its HBM3/HBM3e bandwidth. GDDR cards have several times
more core cycles per byte of bandwidth, so for them the memory bound is the one that binds.

Cores x clock is not a catalog field; it is the catalog's FP32 (non-tensor) peak divided by the FP32
FLOPs one core does per cycle as the vendor counts them (2 x FP32 lanes, dual-issue and packed FP32
included where the vendor's peak includes them), from the architecture whitepapers:

- NVIDIA GP100 (P100), Volta (V100, GV100), Turing (RTX 20, GTX 16, T4, Quadro RTX and T-series),
  GA100 (A100, A800, A30): 64 FP32 lanes per SM;
- NVIDIA consumer Pascal, GA10x (GeForce RTX 30, RTX A-series, A40, A10, Jetson Orin), Ada, Hopper,
  Blackwell: 128;
- Apple GPU cores (M1-M4): 128 ALUs per core;
- AMD compute units: 64 lanes (GCN, CDNA 1/2: MI50/MI60/MI100/MI210/MI250X; RDNA 1/2: RX 5000/6000); 128 as
  counted in the FP32 peak on CDNA 3/4 (MI300X/MI325X/MI355X: packed FP32, 304 CUs x 2.1 GHz x 256 =
  163.4 TF) and RDNA 3/3.5/4 (RX 7000/9000, Radeon 780M/890M/8060S: dual issue, 96 CUs x 2.5 GHz x 256 =
  61.4 TF for the RX 7900 XTX);
- Intel Xe-cores (Arc A/B-series, Arc iGPUs of Meteor/Lunar Lake, Data Center GPU Max/Flex): 128 lanes (16
  vector engines x 8 lanes on Xe-HPG/LPG, 8 x 16 on Xe2 and Xe-HPC).

An AMD compute unit or an Intel Xe-core stands where an SM stands. On CDNA a CU holds the same 2,048
resident work-items as an SM (4 SIMDs), and llama.cpp's HIP build is its CUDA source compiled for it; an
Xe-core holds 16 vector engines x 8 threads. An RDNA CU holds 1,024 (wave32, 2 SIMD32 x 16 waves), half
an SM's, and is counted per CU all the same: an ASSUMPTION the public figures support (per work-group
processor, two CUs, the RX 7900 XTX would decode llama-2-7b Q4_0 at ~101 tok/s, below the 120-135 of
public ROCm tables; per CU, 118). Unknown parts, CPUs and accelerators without a GPU core (TPU, Gaudi) get
0: no kernel bound. Nor does a profile measured by ``tokspeed probe``: its FP32 figure is a measured
matmul (on a Mac, the CPU's), not cores x lanes x clock, and its bandwidth is already what was achieved.

    ``core_cycles_per_s(hw)`` -> cores x clock (1/s), 0 if unknown

The lanes per core come from the device's ``arch`` (``tokspeed.hardware.arch``), never from its name.
"""

from __future__ import annotations

from ..hardware.arch import arch_fp32_lanes

# a GPU whose arch is not known (stated nowhere, and its name names no known part; its derived list says so): as
# before the architecture was data, every NVIDIA part then counts 128 lanes, an Apple GPU core 128, others none
UNKNOWN_ARCH_LANES = {"nvidia": 128, "apple": 128}


def fp32_lanes_per_core(hw) -> int:
    """FP32 lanes of one GPU core (SM, Apple GPU core, AMD CU, Intel Xe-core) of ``hw`` as its FP32 peak
    counts them, from its ``arch``; 0 if not known."""
    if hw.kind not in ("gpu", "soc") or (hw.source or "").startswith("measured by"):
        return 0
    if hw.arch is None:
        vendor = (hw.vendor or "").strip().lower()
        return next((n for v, n in UNKNOWN_ARCH_LANES.items() if vendor.startswith(v)), 0)
    return arch_fp32_lanes(hw.arch)      # archs.toml: an arch not listed has no kernel bound


def core_cycles_per_s(hw) -> float:
    """Cores x clock of ``hw`` (1/s): FP32 peak / (2 FLOPs x lanes per core); 0 if either is unknown."""
    lanes = fp32_lanes_per_core(hw)
    if not lanes or not hw.fp32_tflops:
        return 0.0
    return hw.fp32_tflops * 1e12 / (2 * lanes)
