"""The link between devices and the collectives that cross it.

Ring all-reduce (Patarasuk & Yuan 2009; NCCL's ring): each of N devices sends, and receives,
``2 (N - 1) / N`` times the message over its link, half in the reduce-scatter and half in the
all-gather. The time of one all-reduce is that volume over the per-direction bandwidth plus a fixed
synchronisation latency (kernel launch, flag polling, PCIe/NVLink round trips) that dominates for the
few-KB messages of decode.

Which link: devices with a scale-up fabric (NVLink, Infinity Fabric, ``scale_up_gbps`` in the
catalog, a bidirectional sum) use half of it per direction, within the fabric's reach: 2 devices for
bridged PCIe cards (RTX 3090, A100/H100 PCIe with an NVLink bridge), 72 for GB200/GB300 NVL72, else 8
(one HGX/OAM baseboard). Otherwise peer-to-peer over PCIe at the device's ``host_link_gbps``, within
one server (``PCIE_PER_NODE`` GPUs); more devices than that span servers and talk over the network.

Latency of a small all-reduce: a switched scale-up fabric (NVSwitch, Infinity Fabric) runs it one-shot
(vLLM's custom all-reduce, NCCL LL over NVLS): every device reads every other's buffer in one hop, so the
fitted ``SYNC_LATENCY_S["all-reduce"]`` holds for any N within reach. Over PCIe or the network NCCL runs a
ring: ``2 (N - 1)`` dependent steps, each paying the link's hop latency (``HOP_LATENCY_S``), on top of the
same software cost. Decode of a large model pays this ``syncs_per_layer x layers`` times per token: this,
not bandwidth, is why 16 PCIe GPUs decode slower than 8 on NVLink.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from ..hardware.links import host_link_of

# Synchronisation latency per operation (software + link round trip; bandwidth is counted separately).
# Fitted by scripts/eval_scale_calibration.py --fit on the tensor-parallel decode rows of
# data/validation/calibration.csv, as the median speed-up error minimiser over a grid (docs/scale.md):
SYNC_LATENCY_S = {
    "all-reduce": 1.5e-5,   # one NCCL all-reduce of a decode-size message (gpt-fast on 2-8x A100 NVLink:
                            # 12 rows with a one-GPU counterpart; the NCCL small-message range is ~10-50 us)
    "peer-copy": 3.0e-5,    # one peer copy + stream sync (llama.cpp -sm row gathers over PCIe/bridges:
                            # 67 rows); also used for pipeline and offload hand-offs
}

# Per-step latency of NCCL's ring with the LL protocol, by link (NCCL src/graph/tuning.cc ``hwLat`` for
# LL: NVLink 0.6 us, PCI 1.0 us, NET 2.7 us); a ring all-reduce takes 2 (N - 1) such steps.
HOP_LATENCY_S = {"scale-up": 0.0, "pcie": 1.0e-6, "network": 2.7e-6, "host": 1.0e-6}
PCIE_PER_NODE = 8          # PCIe GPUs one server holds (8-GPU PCIe servers; more = several servers)
NETWORK_LINK = "400 Gb/s InfiniBand NDR (assumed: one NIC per GPU)"
NETWORK_PER_DIRECTION_BYTES_S = 50e9   # 400 Gb/s = 50 GB/s per direction


@dataclass(frozen=True)
class Interconnect:
    name: str
    kind: str                       # scale-up | pcie | network | host
    per_direction_bytes_s: float

    def transfer_s(self, nbytes: float, ideal: bool = False) -> float:
        """One point-to-point copy of ``nbytes`` (pipeline hand-off, offload hand-off)."""
        return nbytes / self.per_direction_bytes_s + (0.0 if ideal else SYNC_LATENCY_S["peer-copy"])

    def allreduce_s(self, nbytes: float, n: int, ideal: bool = False) -> float:
        """Ring volume at bandwidth plus the synchronisation latency: the fitted one-shot latency on a
        switched fabric, plus 2 (N - 1) ring steps of the link's hop latency over PCIe or the network."""
        if n <= 1:
            return 0.0
        return ring_allreduce_bytes(nbytes, n) / self.per_direction_bytes_s + (0.0 if ideal else
                                                                              self.allreduce_latency_s(n))

    def allreduce_latency_s(self, n: int) -> float:
        return SYNC_LATENCY_S["all-reduce"] + 2 * (n - 1) * HOP_LATENCY_S.get(self.kind, 0.0)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "per_direction_gbps": self.per_direction_bytes_s / 1e9,
                "allreduce_latency_us": SYNC_LATENCY_S["all-reduce"] * 1e6,
                "ring_step_latency_us": HOP_LATENCY_S.get(self.kind, 0.0) * 1e6,
                "copy_latency_us": SYNC_LATENCY_S["peer-copy"] * 1e6}


def ring_allreduce_bytes(message_bytes: float, n: int) -> float:
    """Bytes each device sends (and receives) in a ring all-reduce of ``message_bytes``."""
    return 2 * (n - 1) / n * message_bytes if n > 1 else 0.0


def scale_up_reach(hw) -> int:
    text = f"{hw.id} {hw.notes}".lower()
    if "bridge" in text or "pairwise" in text:
        return 2
    if hw.id.startswith(("gb200", "gb300")):
        return 72
    return 8


def device_link(hw, n: int) -> Interconnect | None:
    """The link N copies of ``hw`` use to talk to each other (None for one device)."""
    if n <= 1:
        return None
    if hw.scale_up_gbps and n <= scale_up_reach(hw):
        return Interconnect(f"scale-up {hw.scale_up_gbps:g} GB/s bidirectional", "scale-up",
                            hw.scale_up_per_direction_bytes_s)
    pcie = host_link(hw, kind="pcie")
    if n <= PCIE_PER_NODE or hw.kind != "gpu":
        return pcie
    return Interconnect(f"{NETWORK_LINK} across {-(-n // PCIE_PER_NODE)} servers", "network",
                        min(pcie.per_direction_bytes_s, NETWORK_PER_DIRECTION_BYTES_S))


def host_link(hw, kind: str = "host") -> Interconnect:
    known = host_link_of(hw)
    if known is not None:
        return Interconnect(known[0], kind, known[1])
    raise UserError(f"{hw.id}: no host link bandwidth in the catalog ({hw.host_link or 'none given'})",
                    "use a TOML hardware file with host_link_gbps")
