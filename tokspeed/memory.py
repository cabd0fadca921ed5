"""The memory budget of a run: weights + KV cache + activations/workspace + engine runtime against the device's
capacity (``memory_budget``), and whether it fits."""

from __future__ import annotations

from dataclasses import dataclass

from .ledger import STATE_BYTES
from .workload import UBATCH

GIB = 2**30


@dataclass
class Memory:
    weights_bytes: float
    kv_bytes: float
    activations_bytes: float
    overhead_bytes: float
    total_bytes: float
    capacity_bytes: float
    fits: bool
    max_context: int           # largest total context (tokens) that fits at this batch
    max_batch: int             # largest batch that fits at this context
    host_bytes: float = 0.0    # weights held in host RAM outside the devices and their capacity (llama.cpp's
                               # token embedding on a discrete GPU: scale.parallel.input_layer_on_host)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def kv_bytes(spec, kv_elem_bytes: float, batch: int, tokens: int) -> float:
    """KV cache for ``batch`` sequences of ``tokens`` tokens (sliding layers hold at most the window; a
    sparse-attention indexer's key cache at its own dtype), plus a hybrid model's fixed-size recurrent state per sequence (F32, whatever ``tokens``)."""
    return batch * (spec.kv_cached_elements(tokens) * kv_elem_bytes + spec.index_cache_bytes(tokens)
                    + spec.n_linear_layers * spec.state_elements_per_layer * STATE_BYTES)


def activation_bytes(spec, batch: int, prompt: int, ubatch: int = UBATCH) -> float:
    """Workspace of one micro-batch at FP32: logits, FFN intermediates and a few d_model-wide buffers.
    An estimate of llama.cpp's compute buffer (it prints ~0.3-0.6 GB for 7-8B models at -ub 512)."""
    ffn = max(spec.d_ff, spec.d_ff_expert * max(spec.n_active_experts, 1))
    rest = _buffer_tokens(batch, prompt, ubatch) * (3 * ffn + 4 * spec.d_model) * 4
    return logits_bytes(spec, batch, prompt, ubatch) + rest


def logits_bytes(spec, batch: int, prompt: int, ubatch: int = UBATCH) -> float:
    """The logits of one micro-batch at FP32, the part of ``activation_bytes`` only the device that runs the output
    layer holds (a layer split's last device)."""
    return _buffer_tokens(batch, prompt, ubatch) * spec.vocab_size * 4


def _buffer_tokens(batch: int, prompt: int, ubatch: int) -> int:
    return min(max(batch * max(prompt, 1), batch), ubatch)


def memory_budget(spec, weights: float, kv_elem_bytes: float, batch: int, tokens: int, prompt: int,
                  overhead: float, capacity: float, ubatch: int = UBATCH, host_bytes: float = 0.0) -> Memory:
    kv = kv_bytes(spec, kv_elem_bytes, batch, tokens)
    act = activation_bytes(spec, batch, prompt, ubatch)
    total = weights + kv + act + overhead
    free = capacity - weights - act - overhead
    per_seq = kv_bytes(spec, kv_elem_bytes, 1, tokens)
    max_batch = int(free // per_seq) if free > 0 and per_seq > 0 else 0
    max_context = _max_context(spec, kv_elem_bytes, batch, free, spec.max_context or 1 << 40)
    return Memory(weights, kv, act, overhead, total, capacity, total <= capacity, max_context, max_batch, host_bytes)


def _max_context(spec, kv_elem_bytes, batch, free, limit: int) -> int:
    """Largest total context (at most ``limit``, the trained window) whose KV cache fits in ``free``.

    The cache holds ``n_full x t + n_sliding x min(t, window)`` token-layers, so the answer is closed
    form; a step of one either way absorbs the rounding of the division."""
    if free <= 0:
        return 0
    if kv_bytes(spec, kv_elem_bytes, batch, limit) <= free:
        return limit
    if spec.has_global_shape or spec.index_topk:    # two kinds of cached row: bisect (the cache grows with t)
        lo, hi = 0, limit           # kv(lo) <= free < kv(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if kv_bytes(spec, kv_elem_bytes, batch, mid) <= free else (lo, mid)
        return lo if kv_bytes(spec, kv_elem_bytes, batch, lo) <= free else 0
    per = batch * spec.kv_elements_per_token_layer * kv_elem_bytes      # bytes per cached token-layer
    if per <= 0:
        return limit
    budget = (free - kv_bytes(spec, kv_elem_bytes, batch, 0)) / per      # token-layers that fit (after a
    #                                                                        hybrid model's fixed state)
    nf, ns, w = spec.n_full_cached, spec.n_sliding_cached, spec.sliding_window
    if not w or budget <= (nf + ns) * w:
        t = int(budget // (nf + ns))
    else:
        t = int((budget - ns * w) // nf) if nf else limit
    t = max(0, min(t, limit))
    while t > 0 and kv_bytes(spec, kv_elem_bytes, batch, t) > free:
        t -= 1
    while t < limit and kv_bytes(spec, kv_elem_bytes, batch, t + 1) <= free:
        t += 1
    return t


def memory_fill(mem: Memory, devices=(), on_host: bool = False) -> float | None:
    """The largest share of a device's memory a run takes, which places its band in the edge-of-memory cell or not
    (engines/bands.py ``edge_band``): the fullest of ``devices`` ((total, capacity) bytes of each GPU of a multi-device
    setup: a layer split fills its devices unevenly), else the budget's total over its capacity; None where layers or
    weights are on the host (``on_host``: an offload fills the GPU to the edge on purpose) or no capacity is known."""
    if on_host:
        return None
    shares = [t / c for t, c in devices if c > 0] or ([mem.total_bytes / mem.capacity_bytes] if mem.capacity_bytes > 0
                                                      else [])
    return max(shares) if shares else None


def edge_of_memory(devices: list[tuple[str, float, float]], reserve: float) -> str | None:
    """A note when a device that fits has less left than ``reserve``, the engine's runtime reserve (an estimate:
    ``runtime_overhead_gib``): there the backend's own buffers, not this budget, decide whether it fits. ``devices``:
    (name, total bytes, capacity bytes) of each device."""
    for name, total, cap in devices:
        if 0 <= cap - total < reserve:
            return (f"{name} has {(cap - total) / 1e9:.2f} GB of its {cap / 1e9:.2f} GB left, less than the "
                    f"{reserve / 1e9:.2f} GB runtime reserve assumed: the backend's own buffers decide whether "
                    "it fits, and a driver that pages the excess to host memory decodes several times slower "
                    "(two Radeon AI PRO R9700s under Vulkan, gpt-oss-120b: 69 tok/s at a 16K depth, 8.9 at 32K; "
                    "data/validation/calibration-3.csv)")
    return None
