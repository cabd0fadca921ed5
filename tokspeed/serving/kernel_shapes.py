"""One kernel of a serving step at a stated shape, timed as the step times it: the operator the ledger would
build for that shape (``ledger.Op``), on the device as the engine computes on it (``gemm_device.gemm_hardware``),
through ``timing.op_time`` (rates from ``engines.rates`` / ``engines.rates_stream``). Launch and host time are
not in a kernel's time (the step adds them once, ``steptime``); the per-kernel ``launch_s`` the step adds for each
of the operator's kernels is (``_timer``: TensorRT-LLM 4 us, the ledger's 3 kernels of attention). The engine profile takes the fitted factors of
the kernel's path (``kernel_efficiency.kernel_profile``), as ``prediction_setup.resolve`` gives the step;
``fitted=False`` keeps the profile as it is (the fit's prior). Each ``*_op`` returns the operator and the function
that times it; each ``*_s`` the seconds.

Shapes follow the measured kernel tables they are compared with (``benchmarks/bench_kernels_aiconfigurator.py``):

- ``gemm_s``: ``m`` tokens x an ``n`` x ``k`` weight in ``fmt`` (a format table row: its bits per weight);
- ``decode_attention_s``: ``batch`` rows, one query each, over ``kv`` cached tokens, ``heads`` / ``kv_heads`` of
  ``head_dim``, 16-bit cache;
- ``prefill_attention_s``: ``batch`` prompts of ``isl`` tokens, causal, nothing cached;
- ``moe_s``: ``tokens`` tokens, each to ``topk`` of ``experts`` experts (gated: gate, up, down of ``hidden`` x
  ``inter``), the ``1/ep`` share on one GPU, every expert given the same tokens (``balanced`` routing);
- ``allreduce_s``: ``nbytes`` over ``gpus`` copies of the device, through the collectives model.
"""

from __future__ import annotations

from dataclasses import replace

from ..hardware.catalog import get_hardware
from ..ledger import ACT_BYTES, SOFTMAX_FLOPS_PER_SCORE, Op, Role, Scope
from ..quant.format_table import row
from ..quant.schemes import canonical
from ..scale.collectives import engine_allreduce_s
from ..scale.interconnect import device_link
from ..timing import op_time
from .gemm_device import gemm_hardware
from .kernel_efficiency import kernel_profile

def weight_bytes(fmt: str) -> float:
    """Bytes per weight element of ``fmt`` (the format table's bits, scales included)."""
    return row(canonical(fmt)).bits / 8.0


def _device(hardware, fmt: str, engine, fitted: bool, fp4_units: bool = True):
    """(device view, format, profile) of a kernel over ``fmt`` weights; ``fp4_units=False``: the part as one
    without FP4 units (4-bit weights dequantized to BF16 in registers, the W4A16 path, forced)."""
    hw = hardware if not isinstance(hardware, str) else get_hardware(hardware)
    hw = hw if fp4_units else _no_fp4(hw)
    quant = canonical(fmt)
    view = gemm_hardware(hw, quant, engine.name)
    return view, quant, kernel_profile(engine, hw, quant) if fitted else engine


def _no_fp4(hw):
    """``hw`` as a part without FP4 units (the W4A16 path's factors)."""
    return replace(hw, matrix_units=tuple(u for u in hw.matrix_units if "fp4" not in u))


def _timer(hw, prof, quant, tokens):
    """Seconds of an operator as the step counts it: its roofline time plus its kernels' ``launch_s`` each."""
    return lambda op: op_time(op, hw, prof, quant, tokens)[0] + op.kernels * op.count * prof.launch_s


def gemm_op(hardware, engine, fmt: str, m: int, n: int, k: int, fitted: bool = True, fp4_units: bool = True):
    """An ``m`` x ``n`` x ``k`` GEMM over ``fmt`` weights."""
    hw, quant, prof = _device(hardware, fmt, engine, fitted, fp4_units)
    op = Op("gemm", Role.MLP, Scope.DENSE, "tensor", 1, layers=(0, 1), flops=2.0 * m * n * k,
            weight_bytes=n * k * weight_bytes(fmt), act_bytes=(m * k + m * n) * ACT_BYTES)
    return op, _timer(hw, prof, quant, m)


def _attention_op(batch, queries, cached, heads, kv_heads, head_dim, pairs) -> Op:
    kv_tok = 2 * kv_heads * head_dim * ACT_BYTES
    return Op("attention", Role.ATTN_CORE, Scope.DENSE, "tensor", 1, layers=(0, 1),
              flops=batch * heads * pairs * (4 * head_dim + SOFTMAX_FLOPS_PER_SCORE),
              kv_read_bytes=batch * (cached + queries) * kv_tok, kv_write_bytes=batch * queries * kv_tok,
              act_bytes=batch * queries * 2 * heads * head_dim * ACT_BYTES, query_heads_per_kv=heads / kv_heads)


def decode_attention_op(hardware, engine, fmt: str, batch: int, kv: int, heads: int, kv_heads: int,
                        head_dim: int = 128, fitted: bool = True):
    """One decode step's attention core (one layer) over ``kv`` cached tokens per row (16-bit cache) of a model
    with ``fmt`` weights."""
    hw, quant, prof = _device(hardware, fmt, engine, fitted)
    return _attention_op(batch, 1, kv, heads, kv_heads, head_dim, kv + 1), _timer(hw, prof, quant, batch)


def prefill_attention_op(hardware, engine, fmt: str, batch: int, isl: int, heads: int, kv_heads: int,
                         head_dim: int = 128, fitted: bool = True):
    """A causal prompt pass's attention core (one layer): ``isl (isl + 1) / 2`` pairs per prompt."""
    hw, quant, prof = _device(hardware, fmt, engine, fitted)
    op = _attention_op(batch, isl, 0, heads, kv_heads, head_dim, isl * (isl + 1) / 2)
    return op, _timer(hw, prof, quant, batch * isl)


def moe_op(hardware, engine, fmt: str, tokens: int, hidden: int, inter: int, topk: int, experts: int, ep: int,
           fitted: bool = True, fp4_units: bool = True):
    """One MoE layer's routed experts on one of ``ep`` GPUs, balanced routing."""
    hw, quant, prof = _device(hardware, fmt, engine, fitted, fp4_units)
    local = experts / ep
    pairs = tokens * topk / ep
    touched = min(local, pairs)
    op = Op("experts", Role.EXPERTS, Scope.MOE, "tensor", 1, layers=(0, 1), flops=2.0 * pairs * 3 * hidden * inter,
            weight_bytes=touched * 3 * hidden * inter * weight_bytes(fmt),
            act_bytes=(2 * tokens * hidden + pairs * 3 * inter) * ACT_BYTES,
            pairs_per_expert=pairs / touched, experts_touched=touched, out_rows=inter)
    return op, _timer(hw, prof, quant, tokens)


def _seconds(made) -> float:
    op, time = made
    return time(op)


def gemm_s(*a, **kw) -> float:
    """Seconds of ``gemm_op``."""
    return _seconds(gemm_op(*a, **kw))


def decode_attention_s(*a, **kw) -> float:
    """Seconds of ``decode_attention_op``."""
    return _seconds(decode_attention_op(*a, **kw))


def prefill_attention_s(*a, **kw) -> float:
    """Seconds of ``prefill_attention_op``."""
    return _seconds(prefill_attention_op(*a, **kw))


def moe_s(*a, **kw) -> float:
    """Seconds of ``moe_op``."""
    return _seconds(moe_op(*a, **kw))


def allreduce_s(hardware, engine, nbytes: float, gpus: int) -> float:
    """Seconds of an all-reduce of ``nbytes`` over ``gpus`` copies of the device: the algorithm the engine picks
    for that size (``scale.collectives.engine_allreduce_s``), else the link's ring as fitted."""
    hw = hardware if not isinstance(hardware, str) else get_hardware(hardware)
    link = device_link(hw, gpus)
    t = engine_allreduce_s(link, hw, engine.name, nbytes, gpus)
    return t if t is not None else link.allreduce_s(nbytes, gpus)
