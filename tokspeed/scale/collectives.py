"""Collectives from a latency-bandwidth model, per link and algorithm, by message size.

Every collective is ``fixed latency + per-step latencies + bytes each GPU moves / achievable rate``
(Hockney's alpha-beta model; Thakur, Rabenseifner & Gropp 2005 for the algorithms). With ``N`` GPUs, a
message of ``M`` bytes, ``B`` the per-direction rate a GPU reaches (the link's rate x ``bus_efficiency``;
on an Infinity Fabric mesh ``(N - 1)`` peer links), ``L`` the link's hop latency and ``a`` the fixed
latencies of ``fabrics.toml``:

- one-shot all-reduce (vLLM / SGLang ``cross_device_reduce_1stage``, TensorRT-LLM ONESHOT): every GPU
  reads the whole message from each of the others and sums: ``a1 + (N - 1) M / B``;
- two-shot all-reduce (``cross_device_reduce_2stage``, TWOSHOT): a reduce-scatter then an all-gather,
  one more barrier: ``a1 + 2 L + 2 (N - 1) / N x M / B``;
- NCCL ring all-reduce (LL protocol for small messages): ``a + 2 (N - 1) L + 2 (N - 1) / N x M / B``;
  inside one server NCCL's tree is a chain of the same steps; across ``S`` servers the double binary tree
  pays ``2 log2(S)`` network hops instead of ``2 (S - 1)``: NCCL takes the faster;
- all-gather and reduce-scatter (output / input of ``M`` bytes): ``a + (N - 1) L + (N - 1) / N x M / B``;
- all-to-all (each GPU sends ``M`` bytes, ``1/N`` of it to itself) over a switch or mesh, every pair at
  once: ``a + (N - 1) / N x M / B`` (DeepEP's normal kernels at their measured share of the link);
- point-to-point (pipeline hand-off): ``a + M / B``.

Which all-reduce an engine runs, by message size (``allreduce``):
- vLLM 0.13 (``cuda_communicator.py``: custom all-reduce, then torch symmetric memory, then NCCL): the custom
  kernel for 2, 4, 6 or 8 GPUs that are fully connected (a switch, a mesh, or 2 GPUs) below
  ``CUSTOM_ALL_REDUCE_MAX_SIZES`` (all_reduce_utils.py: Hopper 64 / 32 / 0.5 / 0.25 MiB for 2 / 4 / 6 / 8
  GPUs; Blackwell 2 / 2 / 1 / 1 MiB; else its 8 MiB buffer), one-shot for 2 GPUs or below 512 KiB on up to 4
  and 256 KiB on up to 8 (csrc/custom_all_reduce.cuh), else two-shot; torch symmetric memory up to
  ``SYMM_MEM_ALL_REDUCE_MAX_SIZES`` (Hopper 64 / 32 / 64 / 64 MiB) runs two-shot (multimem on NVLink SHARP
  is taken as two-shot too); above, NCCL;
- SGLang 0.5.6 (``custom_all_reduce.py``): the same kernel below 8 MiB (16 MiB on ROCm), else NCCL;
- TensorRT-LLM 1.x (``AllReduceStrategy.AUTO``): NCCL above its workspace (16 MiB for 2 GPUs, 8 MiB
  beyond) or without peer access; one-shot up to 128 tokens, two-shot above;
- other engines: NCCL.
Read from the released packages (vllm 0.13.0, sglang 0.5.6 wheels): the size limits, world sizes and the order
of the paths. Not in the wheels, from the sources (not re-read against a release; confidence medium): the
one-/two-stage switch of ``custom_all_reduce.cuh`` and TensorRT-LLM's AUTO rule (``thop/allreduceOp.cpp``, ``customAllReduceUtils.h``).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FILE = Path(__file__).parent / "fabrics.toml"
MIB = 1024 * 1024
US = 1e-6

# vLLM 0.13 vllm/distributed/device_communicators/all_reduce_utils.py, by compute capability and GPUs
VLLM_CUSTOM_MAX = {"hopper": {2: 64 * MIB, 4: 32 * MIB, 6: MIB // 2, 8: MIB // 4},
                   "blackwell": {2: 2 * MIB, 4: 2 * MIB, 6: MIB, 8: MIB}}
VLLM_SYMM_MAX = {"hopper": {2: 64 * MIB, 4: 32 * MIB, 6: 64 * MIB, 8: 64 * MIB},
                 "blackwell": {2: 8 * MIB, 4: 32 * MIB, 6: 128 * MIB, 8: 128 * MIB}}
VLLM_CUSTOM_BUFFER = 8192 * 1024              # custom_all_reduce.py max_size (any other architecture)
CUSTOM_WORLD_SIZES = (2, 4, 6, 8)             # CustomAllreduce._SUPPORTED_WORLD_SIZES (vLLM, SGLang)
SGLANG_CUSTOM_MAX = {"cuda": 8192 * 1024, "rocm": 2 * 8192 * 1024}   # SGLang _MAX_CAR_SIZE
TRTLLM_WORKSPACE = {2: 16 * MIB, "more": 8 * MIB}    # customAllReduceUtils::getMaxRequiredWorkspaceSize
TRTLLM_ONESHOT_TOKENS = 128                          # AUTO: one-shot up to this many tokens


@dataclass(frozen=True)
class Fabric:
    """A link as collectives see it: ``rate`` bytes/s per direction one GPU reaches, latencies in s."""
    kind: str                 # nvswitch | infinity-fabric | pcie | network
    rate: float
    hop_s: float
    nccl_base_s: float
    oneshot_s: float
    fully_connected: bool     # every GPU one hop from every other (custom kernels allowed)


@lru_cache(maxsize=1)
def table() -> dict:
    with open(FILE, "rb") as f:
        return tomllib.load(f)


def fabric(link, n: int, hw=None) -> Fabric:
    """The fabric ``n`` GPUs of ``hw`` talk over on ``link`` (``scale.interconnect.Interconnect``)."""
    kind = {"scale-up": "nvswitch", "pcie": "pcie", "network": "network"}.get(getattr(link, "kind", "scale-up"), "pcie")
    rate = link.per_direction_bytes_s
    vendor = str(getattr(hw, "vendor", "")).lower()
    if kind == "nvswitch" and vendor == "amd":
        kind = "infinity-fabric"
    row = table()["fabric"][kind]
    peer = row.get("per_peer_gbps", {}).get(getattr(hw, "id", ""), 0.0)
    if peer:
        rate = min(rate, (n - 1) * peer * 1e9)
    connected = kind in ("nvswitch", "infinity-fabric") or (kind == "pcie" and n == 2)
    return Fabric(kind, rate * row["bus_efficiency"], row["hop_us"] * US, row["nccl_base_us"] * US,
                  row["oneshot_us"] * US, connected)


# -- algorithms -------------------------------------------------------------------------------------------
def oneshot_allreduce_s(f: Fabric, m: float, n: int) -> float:
    return 0.0 if n <= 1 else f.oneshot_s + (n - 1) * m / f.rate


def twoshot_allreduce_s(f: Fabric, m: float, n: int) -> float:
    return 0.0 if n <= 1 else f.oneshot_s + 2 * f.hop_s + 2 * (n - 1) / n * m / f.rate


def ring_allreduce_s(f: Fabric, m: float, n: int) -> float:
    return 0.0 if n <= 1 else f.nccl_base_s + 2 * (n - 1) * f.hop_s + 2 * (n - 1) / n * m / f.rate


def tree_allreduce_s(f: Fabric, m: float, n: int, servers: int = 1) -> float:
    """NCCL's double binary tree across ``servers`` (a chain of the ``n / servers`` GPUs inside each)."""
    if n <= 1:
        return 0.0
    if servers <= 1:
        return ring_allreduce_s(f, m, n)
    local = max(1, n // servers)
    inner = table()["fabric"]["nvswitch"]["hop_us"] * US
    hops = 2 * (local - 1) * inner + 2 * math.ceil(math.log2(servers)) * f.hop_s
    return f.nccl_base_s + hops + 2 * (n - 1) / n * m / f.rate


def nccl_allreduce_s(f: Fabric, m: float, n: int, servers: int = 1) -> float:
    return min(ring_allreduce_s(f, m, n), tree_allreduce_s(f, m, n, servers))


def allgather_s(f: Fabric, m_out: float, n: int) -> float:
    """All-gather into ``m_out`` bytes on every GPU (reduce-scatter of ``m_out`` bytes: the same)."""
    return 0.0 if n <= 1 else f.nccl_base_s + (n - 1) * f.hop_s + (n - 1) / n * m_out / f.rate


reducescatter_s = allgather_s


def all_to_all_s(f: Fabric, m_send: float, n: int, efficiency: float = 1.0) -> float:
    """Each GPU sends ``m_send`` bytes spread over the ``n`` GPUs (its own share stays)."""
    return 0.0 if n <= 1 else f.nccl_base_s + (n - 1) / n * m_send / (f.rate * efficiency)


def p2p_s(f: Fabric, m: float) -> float:
    return f.nccl_base_s + m / f.rate


def deepep_efficiency() -> float:
    """DeepEP normal kernels' share of the link rate over NCCL's bus efficiency (fabrics.toml [deepep])."""
    return table()["deepep"]["normal_efficiency"] / table()["fabric"]["nvswitch"]["bus_efficiency"]


# -- what each engine runs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    algorithm: str            # one-shot | two-shot | nccl
    seconds: float


def _arch_key(hw) -> str:
    arch = str(getattr(hw, "arch", "")).lower()
    return "hopper" if arch.startswith("hopper") else "blackwell" if arch.startswith("blackwell") else ""


def _custom(f: Fabric, m: float, n: int, limit: float) -> Choice | None:
    """vLLM's / SGLang's custom kernel where it applies (csrc/custom_all_reduce.cuh picks the stage)."""
    if n not in CUSTOM_WORLD_SIZES or not f.fully_connected or m >= limit:
        return None
    if n == 2 or (n <= 4 and m < 512 * 1024) or m < 256 * 1024:
        return Choice("one-shot", oneshot_allreduce_s(f, m, n))
    return Choice("two-shot", twoshot_allreduce_s(f, m, n))


def engine_family(engine_name: str) -> str:
    """vllm | sglang | tensorrt-llm for those engines' profiles, else "" (NCCL)."""
    name = str(engine_name).lower()
    for fam in ("vllm", "sglang", "tensorrt-llm"):
        if name.startswith(fam):
            return fam
    return "tensorrt-llm" if name.startswith(("trt", "tensorrt")) else ""


def allreduce(engine_name: str, f: Fabric, m: float, n: int, hw=None, tokens: float | None = None,
              servers: int = 1) -> Choice:
    """The all-reduce ``engine_name`` runs for ``m`` bytes over ``n`` GPUs, and its time."""
    if n <= 1:
        return Choice("none", 0.0)
    fam = engine_family(engine_name)
    arch = _arch_key(hw)
    if fam == "vllm":
        limit = VLLM_CUSTOM_MAX.get(arch, {}).get(n, VLLM_CUSTOM_BUFFER)
        hit = _custom(f, m, n, limit)
        if hit:
            return hit
        if arch and f.fully_connected and m < VLLM_SYMM_MAX[arch].get(n, 0):
            return Choice("two-shot", twoshot_allreduce_s(f, m, n))
    elif fam == "sglang":
        amd = str(getattr(hw, "vendor", "")).lower() == "amd"
        hit = _custom(f, m, n, SGLANG_CUSTOM_MAX["rocm" if amd else "cuda"])
        if hit:
            return hit
    elif fam == "tensorrt-llm" and f.fully_connected and servers <= 1:
        if m <= TRTLLM_WORKSPACE[2 if n <= 2 else "more"]:
            if tokens is not None and tokens > TRTLLM_ONESHOT_TOKENS:
                return Choice("two-shot", twoshot_allreduce_s(f, m, n))
            return Choice("one-shot", oneshot_allreduce_s(f, m, n))
    return Choice("nccl", nccl_allreduce_s(f, m, n, servers))


def servers_of(link, n: int) -> int:
    """Servers ``n`` GPUs span on ``link``: one unless the link is the network (8 GPUs a server)."""
    return -(-n // 8) if getattr(link, "kind", "") == "network" else 1


def engine_allreduce(link, hw, engine_name: str, m: float, n: int, tokens: float | None = None) -> Choice | None:
    """The all-reduce of ``m`` bytes a serving engine (vLLM, SGLang, TensorRT-LLM) runs over ``link`` (an
    ``Interconnect``) and its time; None for other engines (``Interconnect.allreduce_s``: NCCL as fitted)."""
    if not engine_family(engine_name) or link is None:
        return None
    return allreduce(engine_name, fabric(link, n, hw), m, n, hw, tokens, servers_of(link, n))


def engine_allreduce_s(link, hw, engine_name: str, m: float, n: int, tokens: float | None = None) -> float | None:
    one = engine_allreduce(link, hw, engine_name, m, n, tokens)
    return None if one is None else one.seconds


def engine_p2p_s(link, hw, engine_name: str, m: float) -> float | None:
    """A pipeline hand-off of ``m`` bytes as a serving engine sends it (NCCL send / receive); None for other
    engines (``Interconnect.transfer_s``: a peer copy as fitted on llama.cpp)."""
    if not engine_family(engine_name) or link is None:
        return None
    return p2p_s(fabric(link, 2, hw), m)
