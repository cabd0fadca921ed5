"""The copy of a matmul's weights an engine writes to memory before its GEMM reads them: bytes beyond the ledger's.

ggml-sycl (``ggml-sycl.cpp``, ``ggml_sycl_op_mul_mat_sycl``; read in llama-cpp-python 0.3.16's copy of 2025-08 and
0.3.17's of 2026-03): its MMQ is off (``ggml_sycl_supports_mmq`` returns false), so a quantized matmul over more than
8 tokens, dense or routed expert, dequantises the weights to F16 in a pool buffer (``to_fp16_sycl``) and the
oneDNN/oneMKL GEMM reads them back (priors.toml ``copies_weights_for_gemm``): 2 x ``F16_BYTES`` per weight the pass
multiplies, a cost the prompt's tokens share -- all of them for a dense matmul, only the tokens routed to it for an
expert (about 32 of a 512-token chunk at top-8 of 128), which is why MoE prefill pays it many times over. BF16
weights take that function's F32 branch in every pass, a decode step's too (``backends.SYCL_BF16_F32``): each weight
read as BF16, written as F32 and read back by the SGEMM, 2 x ``F32_BYTES`` per weight beyond the ledger's read, the
LM head's included (BF16 has no matrix-vector kernel either). ``timing.PassRates`` times the copy as its own kernel
before the GEMM, at the device's stream rate.
"""

from __future__ import annotations

from ..ledger import Role
from ..quant.format_key import format_key
from .backends import sycl_bf16_copy
from .rates import MATVEC_MAX_TOKENS

F16_BYTES = 2
F32_BYTES, BF16_BYTES = 4, 2


def dequant_bytes(engine, op, fmt, tokens: int) -> float:
    """Bytes the weight matmul ``op`` (weights of format ``fmt``) moves, beyond its ledger's, in a pass of ``tokens``
    tokens under an engine that copies the weights in memory before its GEMM (the module docstring): quantized weights
    in a tiled pass each written as F16 and read back, 2 x ``F16_BYTES`` per weight multiplied (FLOPs / (2 x the
    tokens each meets: the pass's, or for a routed expert ``op.pairs_per_expert``)), not the LM head's (the
    sequences' last positions only: a matrix-vector product); BF16 weights in every pass written as F32 and read
    back, 2 x ``F32_BYTES`` per weight read. 0 for the router (F32 weights), attention, other float weights,
    quantized matrix-vector passes and other engines."""
    if not (fmt and getattr(engine, "copies_weights_for_gemm", False) and op.unit == "tensor" and op.weight_bytes
            and op.role != Role.ROUTER and not (op.kv_read_bytes or op.kv_write_bytes)):
        return 0.0
    fmt = format_key(fmt)
    if sycl_bf16_copy(getattr(engine, "name", ""), fmt):
        return 2 * F32_BYTES / BF16_BYTES * op.weight_bytes
    if not fmt.quantized or tokens <= MATVEC_MAX_TOKENS or op.role == Role.LM_HEAD:
        return 0.0
    return 2 * F16_BYTES * op.flops / (2 * (op.pairs_per_expert or tokens))
