"""How an engine family composes a step from decodes and prompt chunks (vLLM ``v1/core/sched/scheduler.py``,
SGLang's ``scheduler.py``, TensorRT-LLM's in-flight batcher).

- mixed (vLLM V1, TensorRT-LLM, llama.cpp's server): every step decodes the running sequences and fills the
  token budget left over with prompt chunks;
- prefill first (SGLang, ``mixed = false``): whenever a prompt is waiting and admissible, or part-way through
  its prefill, a step prefills alone and the decodes pause.
"""

from __future__ import annotations


def prefill_only(inst) -> bool:
    """Whether the next step of ``inst`` (an ``instance.Instance``) prefills alone (prefill-first engines)."""
    if inst.sched.mixed:
        return False
    if inst.prefilling:
        return True
    return bool(inst.waiting and inst.admissible(inst.waiting[0]) and inst.room_for_seqs())


def takes_prompts(inst, n_dec: int, alone: bool) -> bool:
    """Whether the step carries prompt chunks: always on a mixed engine, else only without decodes."""
    return inst.sched.mixed or alone or not n_dec
