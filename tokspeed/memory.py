"""Memory fit: weights + KV cache + activations/workspace + engine runtime vs the device's capacity."""

from __future__ import annotations

from dataclasses import asdict, dataclass

GIB = 2**30
UBATCH = 512   # tokens per prefill micro-batch (llama.cpp -ub default, vLLM chunked prefill ~512)


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

    def to_dict(self) -> dict:
        return asdict(self)


def kv_bytes(spec, kv_elem_bytes: float, batch: int, tokens: int) -> float:
    """KV cache for ``batch`` sequences of ``tokens`` tokens (sliding layers hold at most the window),
    plus a hybrid model's fixed-size recurrent state per sequence (F32, whatever ``tokens``)."""
    from .ledger import STATE_BYTES

    return batch * (spec.kv_cached_tokens(tokens) * spec.kv_elements_per_token_layer * kv_elem_bytes
                    + spec.n_linear_layers * spec.state_elements_per_layer * STATE_BYTES)


def activation_bytes(spec, batch: int, prompt: int) -> float:
    """Workspace of one micro-batch at FP32: logits, FFN intermediates and a few d_model-wide buffers.
    An estimate of llama.cpp's compute buffer (it prints ~0.3-0.6 GB for 7-8B models at -ub 512)."""
    tokens = min(max(batch * max(prompt, 1), batch), UBATCH)
    ffn = max(spec.d_ff, spec.d_ff_expert * max(spec.n_active_experts, 1))
    return tokens * (spec.vocab_size + 3 * ffn + 4 * spec.d_model) * 4


def memory_fit(spec, weights: float, kv_elem_bytes: float, batch: int, tokens: int, prompt: int,
               overhead: float, capacity: float) -> Memory:
    kv = kv_bytes(spec, kv_elem_bytes, batch, tokens)
    act = activation_bytes(spec, batch, prompt)
    total = weights + kv + act + overhead
    free = capacity - weights - act - overhead
    per_seq = kv_bytes(spec, kv_elem_bytes, 1, tokens)
    max_batch = int(free // per_seq) if free > 0 and per_seq > 0 else 0
    max_context = _max_context(spec, kv_elem_bytes, batch, free)
    return Memory(weights, kv, act, overhead, total, capacity, total <= capacity, max_context, max_batch)


def _max_context(spec, kv_elem_bytes, batch, free) -> int:
    if free <= 0:
        return 0
    lo, hi = 0, 1
    while kv_bytes(spec, kv_elem_bytes, batch, hi) <= free and hi < 1 << 40:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if kv_bytes(spec, kv_elem_bytes, batch, mid) <= free:
            lo = mid
        else:
            hi = mid
    return lo
