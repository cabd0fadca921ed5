"""Weights that do not fit in VRAM: the two mechanisms, kept distinct.

``layers`` (llama.cpp ``--gpu-layers N`` / ``-ngl``): the last N layers live in VRAM and run on the GPU;
the first L - N layers live in system RAM and run on the CPU *at the CPU's memory bandwidth*. The
token embedding stays in RAM, and the output layer (final norm + LM head) goes to the GPU only when
N > L (llama.cpp counts it as layer L+1). Decode crosses the host link twice per token with one hidden
state; prefill batches of >= 32 tokens run the RAM-held layers on the GPU, copying their weights over
the host link (llama.cpp's scheduler). ``auto`` picks the largest N that fits.

``experts`` (llama.cpp ``--n-cpu-moe N`` / ``-ot exps=CPU``, for MoE models): only the routed-expert
tensors of the first N layers stay in RAM and run on the CPU, which reads just the experts the tokens
pick; attention, shared experts, norms and the head stay on the GPU. ``--gpu-layers M`` keeps the
experts of the last M layers on the GPU; ``auto`` moves the fewest layers' experts that makes VRAM fit.

``stream`` (Hugging Face Accelerate ``device_map="auto"`` with CPU offload): the GPU computes every
layer; layers that do not fit stay in RAM and are copied over the host link *every pass*. This is the
seeds' "weights behind PCIe": an RTX 4090 reads VRAM at 1,008 GB/s but PCIe 4.0 x16 at 31.5 GB/s per
direction, 32x slower.
"""

from __future__ import annotations

from ..engines.host_ops import DEFAULT_HOST, cpu_stage
from ..errors import UserError
from ..hardware.catalog import get_hardware
from ..hardware.spec import Hardware
from ..workload import UBATCH
from .interconnect import host_link
from .layout import Layout, Stage, device_memory, input_off_device, layer_expert_bytes, layer_weight_bytes
from .parallel import Parallel, input_layer_on_host

MODES = ("none", "auto", "layers", "stream", "experts")


def normalize_mode(offload: str | None, gpu_layers: int | None) -> str:
    mode = (offload or "none").strip().lower()
    if mode not in MODES:
        raise UserError(f"unknown offload={offload!r}", "choose none, auto, layers, stream or experts", field="offload")
    if mode == "none" and gpu_layers is not None:
        mode = "layers"
    if mode == "auto":
        mode = "layers"
    return mode


def resolve_cpu(cpu):
    if isinstance(cpu, Hardware):
        return cpu
    return get_hardware(cpu or DEFAULT_HOST)     # a typical desktop (engines/host_ops.py)


def _host_bytes(spec, sizes, a, b, embedding, head) -> float:
    per_layer, embd, head_b = sizes
    return sum(per_layer[a:b]) + (embd if embedding else 0.0) + (head_b if head else 0.0)


def llamacpp_layout(spec, storage, hw, prof, cpu_hw, n_gpu: int) -> Layout:
    sizes = layer_weight_bytes(spec, storage)
    L = spec.n_layers
    n_gpu = max(0, min(n_gpu, L + 1))
    cpu_hw, cpu_eng = cpu_stage(cpu_hw)
    if n_gpu > L:
        stages = [Stage("gpu0", "gpu", hw, prof, (0, L), embedding=True, head=True)]
    else:
        first = L - n_gpu
        stages = []
        if first:
            stages.append(Stage("cpu", "cpu", cpu_hw, cpu_eng, (0, first), embedding=True, gpu=hw,
                                host_bytes=_host_bytes(spec, sizes, 0, first, False, False)))
        if n_gpu:
            stages.append(Stage("gpu0", "gpu", hw, prof, (first, L), embedding=not first))
        stages.append(Stage("cpu (output)", "cpu", cpu_hw, cpu_eng, (L, L), head=True, gpu=hw,
                            host_bytes=_host_bytes(spec, sizes, L, L, False, True)))
    return Layout(stages, Parallel(), host=host_link(hw), handoff_value_bytes=4.0, offload="layers",
                  input_on_host=input_layer_on_host(prof, hw))


def stream_layout(spec, storage, hw, prof, cpu_hw, n_resident: int) -> Layout:
    sizes = layer_weight_bytes(spec, storage)
    L = spec.n_layers
    n_resident = max(0, min(n_resident, L + 1))
    if n_resident > L:
        stages = [Stage("gpu0", "gpu", hw, prof, (0, L), embedding=True, head=True)]
    else:
        stages = []
        if n_resident:
            stages.append(Stage("gpu0", "gpu", hw, prof, (0, n_resident), embedding=True))
        stages.append(Stage("gpu0 (streamed)", "stream", hw, prof, (n_resident, L), embedding=not n_resident,
                            head=True, host_bytes=_host_bytes(spec, sizes, n_resident, L, not n_resident, True)))
    return Layout(stages, Parallel(), host=host_link(hw), offload="stream")


def experts_layout(spec, storage, hw, prof, cpu_hw, n_cpu_moe: int) -> Layout:
    """llama.cpp ``--n-cpu-moe N``: the routed experts of the first N layers stay in RAM and run on the
    CPU (reading only the experts the tokens pick); attention, shared experts and everything else on
    the GPU. Two hidden-state hand-offs per such layer."""
    L = spec.n_layers
    n = max(0, min(n_cpu_moe, L))
    experts = layer_expert_bytes(spec, storage)
    stages = [Stage("gpu0", "gpu", hw, prof, (0, L), embedding=True, head=True, ops="rest" if n else "all")]
    if n:
        if n < L:
            stages.append(Stage("gpu0 (experts)", "gpu", hw, prof, (n, L), ops="experts"))
        cpu_hw, cpu_eng = cpu_stage(cpu_hw)
        stages.append(Stage("cpu (experts)", "cpu", cpu_hw, cpu_eng, (0, n), gpu=hw,
                            host_bytes=sum(experts[:n]), ops="experts"))
    return Layout(stages, Parallel(), host=host_link(hw), handoff_value_bytes=4.0, offload="experts",
                  input_on_host=input_layer_on_host(prof, hw))


def _gpu_fits(layout, spec, storage, kvb, batch, tokens, prompt, overhead, cpu_hw, ubatch) -> bool:
    rows = device_memory(layout, spec, storage, kvb, batch, tokens, prompt, overhead, host_hw=cpu_hw, ubatch=ubatch)
    return all(r.fits for r in rows if r.kind == "gpu")


def first_true(pred, lo: int, hi: int) -> int:
    """Smallest n in [lo, hi] with pred(n), for pred False...False True...True; hi + 1 if none."""
    if not pred(hi):
        return hi + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def max_gpu_layers(build, spec, storage, kvb, batch, tokens, prompt, overhead, cpu_hw, ubatch: int = UBATCH) -> int:
    """Largest N (0..L+1) whose layout fits the GPU (GPU memory grows with N)."""
    n = first_true(lambda k: not _gpu_fits(build(k), spec, storage, kvb, batch, tokens, prompt, overhead, cpu_hw,
                                           ubatch),
                   0, spec.n_layers + 1)
    return max(0, n - 1)


def min_cpu_moe(build, spec, storage, kvb, batch, tokens, prompt, overhead, cpu_hw, ubatch: int = UBATCH) -> int:
    """Fewest layers whose experts must leave VRAM (GPU memory falls as N grows); all if none fits."""
    n = first_true(lambda k: _gpu_fits(build(k), spec, storage, kvb, batch, tokens, prompt, overhead, cpu_hw, ubatch),
                   0, spec.n_layers)
    return min(n, spec.n_layers)


def offload_layout(mode, spec, storage, hw, prof, kvb, gpu_layers, cpu, batch, tokens, prompt, overhead,
                   ubatch: int = UBATCH):
    if hw.kind != "gpu":
        raise UserError(f"offload needs a discrete GPU; {hw.id} is a {hw.kind} (one memory: nothing to offload)",
                        "use a GPU, e.g. hardware='rtx-4090'", field="offload")
    cpu_hw = resolve_cpu(cpu)
    if mode == "experts":
        if not spec.is_moe:
            raise UserError(f"offload='experts' needs a mixture-of-experts model; {spec.id} is dense",
                            "use offload='auto' (whole layers)", field="offload")
        build = lambda n: experts_layout(spec, storage, hw, prof, cpu_hw, n)   # noqa: E731
        L = spec.n_layers        # --gpu-layers N: the experts of the last N layers stay on the GPU
        n = L - min(gpu_layers, L) if gpu_layers is not None else min_cpu_moe(build, spec, storage, kvb, batch,
                                                                                tokens, prompt, overhead, cpu_hw,
                                                                                ubatch)
        layout = build(n)
        layout.gpu_layers = spec.n_layers - min(n, spec.n_layers)
        layout.cpu_hw = cpu_hw
        layout.notes.append(f"routed experts of the first {n} layers in RAM (llama.cpp --n-cpu-moe {n})")
        return layout
    if mode == "layers":
        build = lambda n: llamacpp_layout(spec, storage, hw, prof, cpu_hw, n)   # noqa: E731
    else:
        build = lambda n: stream_layout(spec, storage, hw, prof, cpu_hw, n)     # noqa: E731
    if gpu_layers is None:
        gpu_layers = max_gpu_layers(build, spec, storage, kvb, batch, tokens, prompt, overhead, cpu_hw, ubatch)
    elif gpu_layers < 0:
        raise UserError(f"gpu_layers must be >= 0, got {gpu_layers}", field="gpu_layers")
    layout = build(gpu_layers)
    layout.notes.append(f"{min(gpu_layers, spec.n_layers + 1)} of {spec.n_layers + 1} layers (incl. output) on the GPU")
    layout.gpu_layers = min(gpu_layers, spec.n_layers + 1)
    layout.cpu_hw = cpu_hw
    return layout


def vram_vs_host_ratio(hw) -> float:
    """The seeds' comparison: VRAM bandwidth over the host link's per-direction bandwidth."""
    return hw.bandwidth_gbps / hw.host_link_gbps if hw.host_link_gbps else float("inf")


def weights_in_ram_bytes(spec, storage, layout) -> float:
    per_layer, embd, head = layer_weight_bytes(spec, storage)
    total = 0.0
    for s in layout.stages:
        if s.kind in ("cpu", "stream"):
            a, b = s.layers
            total += sum(per_layer[a:b]) + (embd if s.embedding else 0) + (head if s.head else 0)
    return total + (embd if input_off_device(layout) else 0.0)
