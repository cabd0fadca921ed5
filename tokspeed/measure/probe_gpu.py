"""GPU probes (CUDA through torch): on-device read/copy/triad bandwidth, matvec/matmul per dtype
with tensor-core dtypes, and the host link (pinned host -> device copy)."""

from __future__ import annotations

from .probe_cpu import probe_bandwidth, probe_matmul, probe_matvec, steadier
from .probe_result import ProbeResult
from .stats import time_call

GIB = 2**30


def probe_h2d(nbytes: int, repeats: int = 5, device: str = "cuda") -> ProbeResult:
    import torch  # lazy: optional dependency (torch, the measure extra)

    host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    t = time_call(lambda: dev.copy_(host, non_blocking=True), repeats, 1, torch.cuda.synchronize)
    return ProbeResult("gpu_h2d_pinned", "GB/s", nbytes, t, "pinned host buffer -> device: bytes copied")


def probe_gpu(quick: bool = False, repeats: int = 5, device: str = "cuda") -> list[ProbeResult]:
    """Full: 4 GiB arrays (far above any L2), 16384^2 matvec, 8192^3 matmul; quick: a quarter."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    sync = torch.cuda.synchronize
    size = GIB if quick else 4 * GIB
    r = steadier(lambda: probe_bandwidth(size, repeats, 2, prefix="gpu", device=device, sync=sync))
    r += probe_matvec(8192 if quick else 16384, ("fp32", "bf16", "fp16"), repeats, 3, "gpu", device, sync)
    r += probe_matmul(4096 if quick else 8192, ("fp32", "bf16", "fp16"), repeats, 3, "gpu", device, sync)
    r.append(probe_h2d(GIB // 4 if quick else GIB, repeats, device))
    return r
