"""A CPU engine's threads (``--threads``, llama.cpp's ``-t``): the share of the cores' SIMD units it computes on.

ggml's CPU backend splits every graph node's rows over its threads, one thread per core being llama.cpp's default
(``cpu_threads`` in the catalog: the physical cores). A thread runs on one core's FMA / dot-product units, so with
``t`` threads of ``c`` cores the compute peaks (the FP32 SIMD rate, the int8 dot-product rate, a SoC's CPU-cluster
rate) are ``min(t, c) / c`` of the device's: SMT siblings share a core's units and add none. The barrier after each
node counts ``t`` arrivals (priors.toml [BARRIER]). The bandwidth a few threads pull is left at the device's: a
core's own limit (its outstanding cache misses over the memory latency) is not in the catalog, so a memory-bound
decode on 1-4 threads is optimistic (the ik_llama.cpp#164 rows decode on 2 threads of a 7950X).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..errors import UserError

# [BARRIER] (priors.toml): a barrier arrival moves the shared counter's cache line from the core that last held it,
# ~30 ns inside a CCX (the cores sharing one L3) and ~100 ns between AMD CCDs (public core-to-core latency maps,
# confidence medium; the prior's 60 ns per thread per ledger kernel is two barriers at the first). Cores per CCX by arch (AMD
# Zen 2: 4-core CCX; Zen 3 / 4 / 5: 8-core CCD with one L3).
CCX_CORES = {"zen2": 4, "zen3": 8, "zen4": 8, "zen5": 8}
LOCAL_LINE_NS, CROSS_CCX_LINE_NS = 30.0, 100.0
NOTE_THREADS = re.compile(r"(?:\b(\d{1,20}) threads\b|-t (\d{1,20})\b)")   # int() never sees 5,000 digits


def with_threads(hw, threads: int | None):
    """``hw`` as a CPU engine running ``threads`` threads sees it (None: llama.cpp's default, unchanged)."""
    if threads is None:
        return hw
    if int(threads) < 1:
        raise UserError(f"threads must be at least 1, got {threads}")
    if hw.kind not in ("cpu", "soc"):
        return hw
    cores = hw.cpu_threads
    if not cores:
        return replace(hw, cpu_threads=int(threads))
    share = min(int(threads), cores) / cores
    return replace(hw, cpu_threads=int(threads), fp32_tflops=hw.fp32_tflops * (share if hw.kind == "cpu" else 1.0),
                   int8_tops=hw.int8_tops * (share if hw.kind == "cpu" else 1.0),
                   cpu_fp32_tflops=hw.cpu_fp32_tflops * share,
                   derived=hw.derived + (f"{threads} threads of {cores} cores: {share:.2g} of the SIMD peaks",))


NUMA_MODES = ("distribute",)


def with_numa(hw, numa: str | None):
    """``hw`` as llama.cpp ``--numa distribute`` runs on it (None: llama.cpp's default, unchanged): its threads are
    spread over every NUMA node, and with the page cache dropped first (common/arg.cpp's --numa help) each node's
    threads first-touch, hence hold, their share of the mmap'd weights, so a multi-socket CPU streams from every
    socket's memory (``bandwidth_gbps``) instead of one's (``cpu_bandwidth_gbps``). ASSUMED: the cross-socket
    traffic of the activations costs nothing next to the weights' (no row measures both settings)."""
    if numa is None:
        return hw
    if numa not in NUMA_MODES:
        raise UserError(f"numa must be one of {', '.join(NUMA_MODES)}, got {numa!r}")
    if hw.kind != "cpu" or not hw.cpu_bandwidth_gbps or hw.cpu_bandwidth_gbps >= hw.bandwidth_gbps:
        return hw
    return replace(hw, cpu_bandwidth_gbps=0.0, cpu_bandwidth_band_pct=0.0,
                   derived=hw.derived + (f"numa {numa}: the weights spread over every socket's memory, "
                                         f"{hw.bandwidth_gbps:g} GB/s (one socket's {hw.cpu_bandwidth_gbps:g})",))


def barrier_scale(hw) -> float:
    """A barrier arrival's cost on ``hw``'s threads over one inside a CCX (the prior's): the threads span at least
    ceil(threads / CCX cores) CCXs, so 1 - 1/n of the arrivals take the line from another one (~100 ns, not ~30). 1
    on one CCX, on a CPU whose arch has none listed (Intel's mesh, Apple's clusters: within the prior's range) or
    with no thread count. A SKU that spreads its cores over more CCDs (EPYC 9274F: 24 cores on 8) crosses more."""
    per, threads = CCX_CORES.get(hw.arch or ""), getattr(hw, "cpu_threads", 0)
    if not per or threads <= per:
        return 1.0
    cross = 1.0 - 1.0 / -(-threads // per)
    return (LOCAL_LINE_NS + cross * (CROSS_CCX_LINE_NS - LOCAL_LINE_NS)) / LOCAL_LINE_NS


def note_threads(note: str) -> int | None:
    """The thread count a calibration row's note states ("16 threads", "-t 32"), else None."""
    m = NOTE_THREADS.search(note or "")
    return int(m.group(1) or m.group(2)) if m else None
