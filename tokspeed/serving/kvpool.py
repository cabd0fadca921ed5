"""The paged KV pool of one engine instance (vLLM ``v1/core/kv_cache_manager.py``, SGLang's token pool,
TensorRT-LLM's KV cache manager), counted in tokens.

A request is admitted with a reservation: its prompt, the output it already made (a preempted one) and
``reserve_output`` of the output it has yet to make (vLLM reserves none ahead and preempts; TensorRT-LLM's
guaranteed-no-evict reserves it all: ``schedulers.toml``). Admission keeps ``WATERMARK`` of the pool free
while anything runs (vLLM's watermark); an idle engine takes any request that fits at all.
"""

from __future__ import annotations

from dataclasses import dataclass

WATERMARK = 0.01      # share of the KV pool kept free when admitting (vLLM's watermark)


@dataclass
class KVPool:
    capacity: float                # tokens the pool holds
    reserve_output: float          # share of a request's remaining output reserved at admission
    used: float = 0.0

    def need(self, isl: int, osl: int, made: float) -> float:
        """Tokens a request (``made`` of its ``osl`` output tokens already made) reserves when admitted."""
        return isl + made + self.reserve_output * max(0.0, osl - made)

    def admissible(self, need: float, busy: bool) -> bool:
        """The pool takes ``need`` more tokens and keeps its watermark free (``busy``: anything runs)."""
        room = self.capacity * (1 - WATERMARK) if busy else self.capacity
        return self.used + need <= room

    def overflows(self, growth: float) -> bool:
        """Whether ``growth`` more tokens (this step's decoders past their reservation) overflow the pool."""
        return self.used + growth > self.capacity
