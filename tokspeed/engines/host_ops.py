"""Ops a llama.cpp backend's kernels lack, run on the host CPU: a linear mixer's ``ggml_ssm_conv`` and
``ggml_ssm_scan`` in builds older than the backend's kernels for them.

ggml's scheduler gives a graph node no device backend supports to the CPU backend (``ggml-backend.cpp``,
``ggml_backend_sched_split_graph``: the nodes a backend's ``supports_op`` refuses fall through to the last backend,
the CPU), and cuts the graph there: the device runs its part and waits (``ggml_backend_synchronize``), the node's
inputs are copied to host memory, the CPU backend runs the node, its output is copied back and the device's next
part starts. Per layer and per op on the host, one pass pays (``timing.host_time``; nothing fitted):

- the bytes across the host link (``host_link_gbps``; a discrete GPU without one: PCIe 4.0 x16, as offloads
  assume; an integrated part copies within its own memory, a read and a write): for ``ssm_scan`` the recurrent state
  down and back (``Op.state_bytes`` each way) and the token tensors in and out (``Op.rule_io_bytes``: x, B, C, dt; y),
  for ``ssm_conv`` its input and output (``Op.conv_io_bytes``);
- what comes back up copied on the host first (ggml-sycl's ``set_tensor``: malloc, memcpy, then the device copy): a
  read and a write of half the crossing at the host's stream;
- the node on the host: the ledger's scan on the host's CPU -- a SoC's own CPU cluster, else a typical desktop
  (``DEFAULT_HOST``, as an offload's CPU stage assumes) -- under llama.cpp's CPU backend, one graph node and its
  barrier.

Not priced: the waits of a split graph (the device's queue drained, the copies' own latency). On the rows below they
are what is left: 0.3-0.6 ms a trip against the priors / the fit (docs/engines.md).

Which ops and builds (capabilities.toml ``host_until``, read from the copies of llama.cpp vendored by
llama-cpp-python, PyPI sdists): ggml-sycl has no ``ssm_conv`` in 0.3.16's copy (2025-08-15) and has it in 0.3.17's
(2026-03-23); no ``ssm_scan`` up to 0.3.22's (2026-05-02), a Mamba-2 one from 0.3.23's (2026-05-11; Mamba-1 "not yet
ported"). ggml-vulkan has neither in 0.3.16's and both in 0.3.17's. Gated DeltaNet layers use ``ssm_conv`` too; their
rule is ``ggml_gated_delta_net`` where the backend runs it and ggml's elementwise ops otherwise (``linear_mixer``),
never a host node. CUDA / HIP and Metal ran both in every copy read (0.3.14, 2025-07).

Seen in the rows: the Arc Pro B70's Nemotron-3-Nano decode under SYCL (build b9039 of 2026-05-06) at 30 tok/s, where
its Vulkan build runs 40 and SYCL runs Qwen3.6-35B-A3B (3 B active, Gated DeltaNet) at 72: 23 Mamba-2 layers each
~0.9 ms slower than the model without the host trips (``data/validation/calibration-3.csv`` c3-0104 / c3-0106).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..hardware.links import host_link_of
from .compat import capability_table, offload_cpu_engine
from .cpu_kernels import before
from .profile import get_engine

DEFAULT_HOST = "ddr5-5600-2ch"   # a typical desktop host: dual-channel DDR5-5600 (89.6 GB/s), 8 Zen 4 cores
# the ggml ops of each scan rule of the ledger (``Op.state_rule``) that can fall back to the host
RULE_OPS = {"mamba2": ("ssm_conv", "ssm_scan"), "gated_deltanet": ("ssm_conv",),
            "gated_deltanet_chunk": ("ssm_conv",)}


@dataclass(frozen=True)
class HostRun:
    """The host trips of one linear-mixer scan operator in one pass: which ops run on the host, how many times the
    device's graph is cut (one per op and layer) and the bytes that cross the host link (both ways, summed)."""
    ops: tuple
    splits: int
    link_bytes: float


@lru_cache(maxsize=256)
def host_until(engine_name: str) -> dict:
    """{op: first build month whose backend runs it}: capabilities.toml ``host_until``; {} for an engine without
    the entry or outside the table. Do not mutate: cached."""
    return capability_table(engine_name, "host_until")


def host_run(op, engine_name: str, month: str = "") -> HostRun | None:
    """The host trips of ``op`` under ``engine_name`` built in ``month`` ("" = today's build); None where ``op`` is
    no linear-mixer scan or the build runs its ops on the device."""
    rule_ops = RULE_OPS.get(getattr(op, "state_rule", ""), ())
    if not rule_ops or not month:
        return None
    until = host_until(engine_name)
    on_host = tuple(o for o in rule_ops if o in until and before(month, until[o]))
    if not on_host:
        return None
    crossing = (op.conv_io_bytes if "ssm_conv" in on_host else 0.0) + \
        (2 * op.state_bytes + op.rule_io_bytes if "ssm_scan" in on_host else 0.0)
    return HostRun(on_host, op.count * len(on_host), crossing)


def link_bytes_s(hw) -> float:
    """Bytes per second one direction of ``hw``'s host link carries: its ``host_link_gbps``; a discrete GPU without
    one, PCIe 4.0 x16 (``hardware/links.toml``, as ``scale.interconnect.host_link`` assumes); an integrated part
    copies within its own memory (a read and a write: half its bandwidth)."""
    known = host_link_of(hw)
    return known[1] if known is not None else hw.bandwidth_bytes_s / 2


def cpu_stage(cpu_hw):
    """(device view, engine) of a CPU that runs part of a model for a GPU -- an offload's CPU stage
    (scale/offload.py), the ops a backend lacks (``timing.host_time``): the CPU's SIMD view (a SoC's CPU cluster) and
    the table's offload CPU engine (llama.cpp's CPU backend, capabilities.toml) with its threads' barrier after each
    graph node."""
    view = cpu_hw.cpu_engine_view()
    return view, get_engine(offload_cpu_engine()).with_barrier(view)


def host_note(run: HostRun, engine_name: str, month: str, hw, host: str, seconds: float) -> str:
    """One line for ``explain``: which ops this build runs on ``host`` (the CPU's name), the trips and what they add
    to a pass."""
    until = host_until(engine_name)
    built = ", ".join(f"{o} before {until[o]}" for o in run.ops)
    known = host_link_of(hw)
    link = known[0] if known is not None else "a copy in its own memory"
    return (f"this build ({engine_name} {month}; {built}) runs {' and '.join(run.ops)} on the host CPU ({host}): "
            f"{run.splits:,} trips a pass, {run.link_bytes / 1e6:,.1f} MB over the host link ({link}), "
            f"{seconds * 1e3:.2f} ms a pass (engines/host_ops.py)")
