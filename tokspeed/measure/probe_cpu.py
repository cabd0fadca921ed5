"""CPU probes with torch on all threads: STREAM-style read/copy/triad bandwidth over buffers far
larger than the last-level cache, and matrix-vector / matrix-matrix throughput per dtype.

Bytes counted as STREAM does: read = 1 array read, copy = 1 read + 1 write, triad
(a = b + s*c) = 2 reads + 1 write; write-allocate traffic is not counted.
"""

from __future__ import annotations

from .probe_result import ProbeResult
from .stats import time_call

GIB = 2**30


def buffer_bytes(requested: int, available: int, arrays: int = 3) -> int:
    """The per-array buffer size: as requested, but never more than a quarter of the available
    RAM across the ``arrays`` buffers alive at once (the machine may be shared)."""
    cap = available // (4 * arrays) if available else requested
    return int(max(64 * 2**20, min(requested, cap)))


def probe_bandwidth(nbytes: int, repeats: int = 5, warmup: int = 1, prefix: str = "cpu",
                    device: str = "cpu", sync=None) -> list[ProbeResult]:
    import torch  # lazy: optional dependency (torch, the measure extra)

    n = nbytes // 4
    a = torch.ones(n, dtype=torch.float32, device=device)
    b = torch.full((n,), 2.0, dtype=torch.float32, device=device)
    c = torch.empty(n, dtype=torch.float32, device=device)
    size = n * 4
    out = [
        ProbeResult(f"{prefix}_read", "GB/s", size, time_call(lambda: a.sum(), repeats, warmup, sync),
                    f"sum of a {size / GIB:.2f} GiB fp32 array: 1 read"),
        ProbeResult(f"{prefix}_copy", "GB/s", 2 * size, time_call(lambda: c.copy_(a), repeats, warmup, sync),
                    "c = a: 1 read + 1 write"),
        ProbeResult(f"{prefix}_triad", "GB/s", 3 * size,
                    time_call(lambda: torch.add(a, b, alpha=3.0, out=c), repeats, warmup, sync),
                    "c = a + 3*b: 2 reads + 1 write"),
    ]
    return out


DTYPES = ("fp32", "bf16")
REMEASURES = 2      # extra tries of an unstable bandwidth probe before its figure is written as unstable


def steadier(probe, tries: int = REMEASURES) -> list[ProbeResult]:
    """``probe()`` (the bandwidth probes), re-run up to ``tries`` times while its read figure is unstable
    (spread above ``stats.UNSTABLE_SPREAD``): the try with the smallest spread is kept, since the profile's
    bandwidth is what MBU divides by (``tokspeed.measure.mbu``); a figure still unstable is written with its
    spread, and MBU against it is then not shown."""
    best = probe()
    for _ in range(tries):
        if not best[0].timing.unstable:
            break
        again = probe()
        if again[0].timing.spread < best[0].timing.spread:
            best = again
    return best


def _torch_dtype(name: str):
    import torch  # lazy: optional dependency (torch, the measure extra)

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def probe_matvec(n: int, dtypes=DTYPES, repeats: int = 5, warmup: int = 2, prefix: str = "cpu",
                 device: str = "cpu", sync=None) -> list[ProbeResult]:
    """y = W x with W [rows, n] as a decoder's linear layer does for one token (F.linear, batch 1);
    rows such that W holds as many bytes as an n x n fp32 matrix whatever the dtype (narrower
    dtypes would otherwise fit a large last-level cache). Reported as weight bytes per second."""
    import torch  # lazy: optional dependency (torch, the measure extra)
    import torch.nn.functional as F  # lazy: optional dependency (torch, the measure extra)

    out = []
    for dt in dtypes:
        elt = torch.tensor([], dtype=_torch_dtype(dt)).element_size()
        rows = n * 4 // elt
        w = torch.randn(rows, n, device=device).to(_torch_dtype(dt))
        x = torch.randn(1, n, device=device).to(_torch_dtype(dt))
        with torch.inference_mode():
            t = time_call(lambda: F.linear(x, w), repeats, warmup, sync)
        out.append(ProbeResult(f"{prefix}_matvec_{dt}", "GB/s", w.numel() * w.element_size(), t,
                               f"F.linear of 1 x {n} by a {rows} x {n} {dt} weight: weight bytes read"))
        if device == "cpu":   # the prepacked oneDNN product the reference decoder uses (decoder.py)
            from .decoder import _onednn_available, _pack  # lazy: optional dependency (torch, through measure.decoder; the measure extra)

            if _onednn_available(_torch_dtype(dt)):
                pk = _pack(w)
                with torch.inference_mode():
                    t = time_call(lambda: torch.ops.mkldnn._linear_pointwise(x, pk, None, "none", [], ""),
                                  repeats, warmup, sync)
                out.append(ProbeResult(f"{prefix}_matvec_onednn_{dt}", "GB/s", w.numel() * w.element_size(), t,
                                       f"prepacked oneDNN linear, same {rows} x {n} {dt} weight"))
    return out


def probe_matmul(n: int, dtypes=DTYPES, repeats: int = 5, warmup: int = 2, prefix: str = "cpu",
                 device: str = "cpu", sync=None) -> list[ProbeResult]:
    """C = A B with square n x n operands: 2 n^3 FLOPs (compute bound)."""
    import torch  # lazy: optional dependency (torch, the measure extra)

    out = []
    for dt in dtypes:
        a = torch.randn(n, n, device=device).to(_torch_dtype(dt))
        b = torch.randn(n, n, device=device).to(_torch_dtype(dt))
        with torch.inference_mode():
            t = time_call(lambda: a @ b, repeats, warmup, sync)
        out.append(ProbeResult(f"{prefix}_matmul_{dt}", "TFLOP/s", 2.0 * n**3, t,
                               f"{n} x {n} x {n} {dt} matmul: 2 n^3 FLOPs"))
    return out


def probe_cpu(quick: bool = False, repeats: int = 5, available_bytes: int = 0) -> list[ProbeResult]:
    """All CPU probes. Full: 1 GiB arrays (32x a 32 MiB L3), 8192^2 matvec (256 MiB fp32), 2048^3 matmul.
    Quick: 256 MiB arrays, the same matvec, 1024^3 matmul."""
    size = buffer_bytes(256 * 2**20 if quick else GIB, available_bytes)
    results = steadier(lambda: probe_bandwidth(size, repeats))
    results += probe_matvec(8192, repeats=repeats)   # 256 MiB fp32 / 128 MiB bf16: beyond the LLC either way
    results += probe_matmul(1024 if quick else 2048, repeats=repeats)
    return results
