"""From the scale options (``--gpus``, ``--parallel``, ``--gpu-layers``, ``--offload``, ``--cpu``) to a
layout, its memory per device and the whole-system ``Memory`` that ``predict`` reports."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from ..memory import Memory
from ..workload import UBATCH
from .interconnect import device_link
from .layout import DeviceMemory, Layout, Stage, device_memory, host_input_bytes
from .offload import normalize_mode, offload_layout
from .parallel import Parallel, check_tp, input_layer_on_host, llama_split_layers, parse_parallel, split_layers


def matmuls_per_layer(spec) -> int:
    attn = 4 if not spec.is_mla else (5 if spec.q_lora_rank else 4)
    return attn + (3 if spec.gated_mlp else 2)


def parallel_layout(spec, hw, prof, par: Parallel) -> Layout:
    llama = prof.runtime == "llama.cpp"
    if not llama:
        check_tp(spec, par.tp)      # llama.cpp's row split cuts rows anywhere; head-sharded TP cannot
    blocks = (llama_split_layers if llama and par.style == "split" else split_layers)(spec.n_layers, par.pp)
    stages = []
    for i, (a, b) in enumerate(blocks):
        first, last = i * par.tp, i * par.tp + par.tp - 1
        name = f"gpu{first}" if par.tp == 1 else f"gpu{first}-{last}"
        stages.append(Stage(name, "gpu", hw, prof, (a, b), tp=par.tp, embedding=i == 0, head=i == len(blocks) - 1))
    return Layout(stages, par, link=device_link(hw, par.tp), pipe_link=device_link(hw, par.n_devices),
                  handoff_value_bytes=4.0 if llama else 2.0,
                  syncs_per_layer=matmuls_per_layer(spec) if llama else 2, row_split=llama and par.tp > 1,
                  input_on_host=input_layer_on_host(prof, hw))


@dataclass
class ScaleSetup:
    layout: Layout
    devices: list[DeviceMemory]
    memory: Memory

    def devices_dict(self) -> dict:
        return {"count": sum(d.count for d in self.devices if d.kind == "gpu"),
                "per_device": [d.to_dict() for d in self.devices]}


def configure(spec, storage, hw, prof, kvb, batch, tokens, prompt, overhead, *, gpus=1, parallel=None,
              gpu_layers=None, offload="none", cpu=None, ubatch: int = UBATCH) -> ScaleSetup:
    mode = normalize_mode(offload, gpu_layers)
    par = parse_parallel(parallel, gpus, prof.name)
    if mode != "none":
        if par.n_devices > 1:
            raise UserError("offload with several GPUs is not modelled", "use either `gpus`/`parallel` or `offload`",
                            field="offload")
        layout = offload_layout(mode, spec, storage, hw, prof, kvb, gpu_layers, cpu, batch, tokens, prompt, overhead,
                                ubatch)
    else:
        layout = parallel_layout(spec, hw, prof, par)
    rows = device_memory(layout, spec, storage, kvb, batch, tokens, prompt, overhead, host_hw=layout.cpu_hw,
                         ubatch=ubatch)
    return ScaleSetup(layout, rows, system_memory(rows, layout, spec, storage, kvb, batch, tokens, prompt, overhead,
                                                  ubatch))


def system_memory(rows, layout, spec, storage, kvb, batch, tokens, prompt, overhead, ubatch: int = UBATCH) -> Memory:
    """Totals over devices (weights once, KV once, activations and runtime per GPU), fits when every
    device fits; largest batch and context bounded by the tightest device."""
    unit = device_memory(layout, spec, storage, kvb, 1, 1, prompt, overhead, host_hw=layout.cpu_hw, ubatch=ubatch)
    unit_kv = {r.name: r.kv_bytes for r in unit}
    per_token_all = spec.kv_elements_per_token_layer * kvb           # kv_all(1, t) = per_token_all * cached(t)
    cached = spec.kv_cached_tokens
    if spec.has_global_shape or spec.index_topk:   # two kinds of cached row (Gemma 4, a DSA indexer): bytes
        per_token_all, cached = 1.0, lambda t: spec.kv_cached_elements(t) * kvb + spec.index_cache_bytes(t)

    def device_fits(b, t):
        for r in rows:
            share = unit_kv[r.name] / (per_token_all * cached(1)) if unit_kv[r.name] else 0.0
            kv = share * b * cached(t) * per_token_all
            if r.weights_bytes + r.activations_bytes + r.overhead_bytes + kv > r.capacity_bytes:
                return False
        return True

    max_batch = _largest(lambda b: device_fits(b, tokens), 1 << 24) if tokens else 0
    max_context = _largest(lambda t: device_fits(batch, t), spec.max_context or 1 << 40)   # trained window
    weights = sum(r.weights_bytes * r.count for r in rows)
    kv = sum(r.kv_bytes * r.count for r in rows)
    act = sum(r.activations_bytes * r.count for r in rows)
    over = sum(r.overhead_bytes * r.count for r in rows)
    cap = sum(r.capacity_bytes * r.count for r in rows)
    return Memory(weights, kv, act, over, weights + kv + act + over, cap, all(r.fits for r in rows),
                  max_context, max_batch, host_bytes=host_input_bytes(layout, spec, storage, rows))


def _largest(ok, limit: int) -> int:
    """Largest n in [0, limit] with ok(n), for ok monotone decreasing; 0 if ok(1) fails."""
    if not ok(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
