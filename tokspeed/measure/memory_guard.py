"""Refuse a measurement that would not fit in free RAM/VRAM, before allocating anything."""

from __future__ import annotations

from ..errors import UserError
from ..units import fmt_bytes
from .detect import free_memory_bytes

# Kept free for the OS, the Python process and allocator slack: 10 % of what is needed plus 0.5 GB.
MARGIN_FRACTION = 0.10
MARGIN_BYTES = 0.5e9


def check_fits(required_bytes: float, device: str = "cpu", what: str = "this run", free_bytes: int | None = None):
    free = free_memory_bytes(device) if free_bytes is None else free_bytes
    need = required_bytes * (1 + MARGIN_FRACTION) + MARGIN_BYTES
    if need > free:
        where = "VRAM" if device.startswith("cuda") else "RAM"
        raise UserError(f"{what} needs about {fmt_bytes(need)} of {where} (incl. margin) but only "
                        f"{fmt_bytes(free)} is free", "use a smaller model, quant='BF16', fewer "
                        "`contexts` or a smaller `batches`")


def torch_run_bytes(spec, elt_bytes: int, max_seq: int, max_batch: int, prompt: int,
                    from_file: bool = False, packed_tied_copy: bool = True) -> float:
    """Bytes the reference decoder will hold: weights (a second LM-head copy when the embedding
    is tied and weights are prepacked), the preallocated KV cache, the prefill activations
    (about d_ff x 2 + d_model x 6 floats per token in flight) and, for files, a float32 load copy."""
    weights = spec.n_params * elt_bytes
    if spec.tied_embeddings and packed_tied_copy:
        weights += spec.vocab_size * spec.d_model * elt_bytes
    kv = 2 * spec.n_layers * max_batch * spec.kv_dim * max_seq * elt_bytes
    ff = max(spec.d_ff, spec.d_ff_expert * max(spec.n_active_experts, 1))
    act = max_batch * prompt * (2 * ff + 6 * spec.d_model) * 4 + max_batch * spec.vocab_size * 4
    load = spec.n_params * 4 if from_file else 0
    return weights + kv + act + load
