"""A layout: the stages a forward pass walks through (which layers, on which device, sharded how),
and the memory each device holds.

A stage is a contiguous block of layers run by one device group:
- ``gpu``: weights and KV cache in the device's memory, ``tp`` devices share each matrix;
- ``cpu`` (llama.cpp offload): weights and KV in host RAM, computed by the CPU at its bandwidth;
- ``stream`` (Accelerate offload): weights in host RAM, copied over the host link to the GPU every
  pass and computed there; the KV cache stays on the GPU.
The first stage also holds the token embedding, the last the final norm and LM head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ledger import weight_ledger
from ..memory import activation_bytes, logits_bytes
from ..workload import UBATCH
from .interconnect import Interconnect
from .parallel import Parallel, input_layer_on_host


@dataclass
class Stage:
    name: str
    kind: str                  # gpu | cpu | stream
    hw: object                 # the device that computes this stage
    engine: object             # its EngineProfile
    layers: tuple[int, int]    # [start, end)
    tp: int = 1
    embedding: bool = False
    head: bool = False
    gpu: object = None         # cpu stage: the GPU llama.cpp sends big prefill batches to
    host_bytes: float = 0.0    # weights held in host RAM that cross the host link when the GPU runs them
    ops: str = "all"           # all | experts (only the routed-expert matmuls) | rest (all but those)

    @property
    def n_layers(self) -> int:
        return self.layers[1] - self.layers[0]


@dataclass
class DeviceMemory:
    name: str
    kind: str                  # gpu | host
    hardware: str
    count: int                 # identical devices this row stands for (TP ranks)
    weights_bytes: float = 0.0
    kv_bytes: float = 0.0
    activations_bytes: float = 0.0
    overhead_bytes: float = 0.0
    capacity_bytes: float = 0.0

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_bytes + self.activations_bytes + self.overhead_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d.update(total_bytes=self.total_bytes, fits=self.fits)
        return d


@dataclass
class Layout:
    stages: list[Stage]
    parallel: Parallel
    link: Interconnect | None = None      # between GPUs (TP all-reduce, pipeline hand-off)
    host: Interconnect | None = None      # GPU <-> host RAM (offload)
    handoff_value_bytes: float = 2.0      # bytes per activation value passed between stages
    syncs_per_layer: int = 2              # TP collectives per layer
    row_split: bool = False               # llama.cpp -sm row: matmul inputs/outputs gathered on the main GPU
    offload: str = "none"                 # none | layers | stream
    pipe_link: Interconnect | None = None # between pipeline stages (defaults to ``link``)
    gpu_layers: int | None = None         # offload: layers (incl. output) on the GPU
    cpu_hw: object = None                 # offload: the host memory system
    input_on_host: bool = False           # llama.cpp on a discrete GPU: the token embedding stays in host RAM
    notes: list = field(default_factory=list)


def layer_expert_bytes(spec, storage) -> list[float]:
    """Bytes of the routed-expert stacks of each layer (0 for dense layers)."""
    return list(weight_ledger(spec, storage).experts_per_layer)


def layer_weight_bytes(spec, storage) -> tuple[list[float], float, float]:
    """Bytes per layer, of the token embedding, and of the head (final norm + LM head)."""
    w = weight_ledger(spec, storage)
    return list(w.per_layer), w.embedding, w.head


def kv_share(spec, tp: int) -> float:
    """Share of the KV cache one TP rank holds: its KV heads, at least one (replicated when tp exceeds
    the KV heads); MLA's latent cache is not split by heads, every rank holds all of it."""
    if tp <= 1:
        return 1.0
    if spec.is_mla:
        return 1.0
    return max(1.0 / tp, 1.0 / spec.n_kv_heads)


def device_memory(layout: Layout, spec, storage, kv_elem_bytes: float, batch: int, tokens: int, prompt: int,
                  overhead_bytes: float, host_hw=None, ubatch: int = UBATCH) -> list[DeviceMemory]:
    """Memory per device: one row per GPU stage (standing for its ``tp`` ranks), plus host RAM when
    weights are offloaded; each GPU's compute buffer for micro-batches of ``ubatch`` tokens."""
    per_layer, embd, head = layer_weight_bytes(spec, storage)
    experts = layer_expert_bytes(spec, storage) if any(s.ops != "all" for s in layout.stages) else None
    kv_all = batch * spec.kv_cached_elements(tokens) * kv_elem_bytes + batch * spec.index_cache_bytes(tokens)
    act, logits = activation_bytes(spec, batch, prompt, ubatch), logits_bytes(spec, batch, prompt, ubatch)
    rows: dict[str, DeviceMemory] = {}

    def row(name, kind, hw, count=1):
        if name not in rows:
            cap = hw.usable_bytes
            rows[name] = DeviceMemory(name, kind, hw.id, count, capacity_bytes=cap)
            if kind == "gpu":                # the logits are on the device that runs the output layer (below)
                rows[name].activations_bytes = act - logits
                rows[name].overhead_bytes = overhead_bytes
        return rows[name]

    gpu_name = None
    stream_buf = 0.0
    for s in layout.stages:
        a, b = s.layers
        if s.ops == "experts":          # llama.cpp --n-cpu-moe: the CPU stage's experts live in RAM
            if s.kind == "cpu":         # (a GPU experts stage is already counted in its "rest" stage)
                row("host", "host", s.hw).weights_bytes += sum(experts[a:b])
                row(gpu_name or "gpu0", "gpu", s.gpu).weights_bytes -= sum(experts[a:b])
            continue
        on_host = layout.input_on_host and s.kind == "gpu"      # parallel.input_layer_on_host
        w = (sum(per_layer[a:b]) + embd * embedding_tables(spec, s.embedding, s.head, on_host)
             + (head if s.head else 0.0))
        kv = kv_all * (b - a) / spec.n_layers
        if s.kind == "gpu":
            r = row(s.name, "gpu", s.hw, s.tp)
            r.weights_bytes += w / s.tp
            r.kv_bytes += kv * kv_share(spec, s.tp)
            gpu_name = gpu_name or s.name
        elif s.kind == "cpu":
            r = row("host", "host", s.hw)
            r.weights_bytes += w
            r.kv_bytes += kv
        else:  # stream: weights in RAM, KV and one layer's buffer on the GPU
            r = row("host", "host", host_hw or s.hw)
            r.weights_bytes += w
            g = row(gpu_name or "gpu0", "gpu", s.hw)
            g.kv_bytes += kv
            stream_buf = max(stream_buf, max(per_layer[a:b], default=0.0))
        # the logits: on the GPU that runs the output layer; llama.cpp runs a RAM-held output layer's prompt
        # batches on the GPU too (op offload), so there they are in its buffer as well
        target = s.name if s.kind == "gpu" else gpu_name or "gpu0"
        if s.head and target in rows:
            rows[target].activations_bytes += logits
    if stream_buf:
        rows[gpu_name or "gpu0"].activations_bytes += stream_buf   # Accelerate copies one layer at a time
    if "host" in rows and input_off_device(layout):
        rows["host"].weights_bytes += embd                          # offload: with the layers in RAM
    return list(rows.values())


def input_off_device(layout: Layout) -> bool:
    """The token embedding a GPU stage would hold is in host RAM instead (``Layout.input_on_host``)."""
    return layout.input_on_host and any(s.embedding and s.kind == "gpu" for s in layout.stages)


def one_device_input(spec, storage, prof, hw) -> tuple[float, float]:
    """(bytes the device does not hold, bytes in host RAM) of llama.cpp's token embedding on one discrete GPU
    (``parallel.input_layer_on_host``): the table stays in host RAM; a tied output layer keeps a copy on the
    device, so only an untied model's device memory shrinks. (0, 0) for every other engine or device."""
    if not input_layer_on_host(prof, hw):
        return 0.0, 0.0
    embd = layer_weight_bytes(spec, storage)[1]
    return embd * (1 - embedding_tables(spec, True, True, True)), embd


def embedding_tables(spec, embedding: bool, head: bool, on_host: bool) -> int:
    """The token-embedding tables a device stage holds: the input layer's where it runs it and llama.cpp does not
    keep it in host RAM (``on_host``), else, where it runs a tied output layer, the head's own copy of it (the LM head
    reads the tied table: llama.cpp's TENSOR_DUPLICATED on the last device)."""
    return int((embedding and not on_host) or (head and spec.tied_embeddings))


def host_input_bytes(layout: Layout, spec, storage, rows: list[DeviceMemory]) -> float:
    """The token embedding llama.cpp holds in host RAM outside every device row (no offload's host row to
    hold it): not counted against the devices' capacity, reported beside it."""
    if not input_off_device(layout) or any(r.kind == "host" for r in rows):
        return 0.0
    return layer_weight_bytes(spec, storage)[1]
