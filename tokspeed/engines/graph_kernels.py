"""Kernels a server engine launches for the operators the ledger lists, where it fuses them.

The operator ledger (``tokspeed/ledger.py``) counts kernels as llama.cpp launches them: q, k and v as three
matmuls, gate, up and down as three, a residual add on its own, the attention core as three (scores, softmax,
values). Server engines launch fewer, and each launch of a captured CUDA graph costs the engine's ``launch_s``
whatever its bytes ([GRAPHFLOOR] in priors.toml), so at small decode batches the count is the step time.
capabilities.toml ``kernels.fused`` names the fusions an engine makes, read from its code:

- ``qkv``: q, k and v projections are one GEMM (vLLM / SGLang ``QKVParallelLinear``; TensorRT-LLM's ``qkv_proj``);
  with MLA the q_a and kv_a projections are one (``fused_qkv_a_proj_with_mqa``), the other two stay.
- ``gate_up``: a gated FFN's gate and up projections are one GEMM, for dense layers (``MergedColumnParallelLinear
  gate_up_proj``), routed experts (fused MoE's stacked ``w13``) and shared experts.
- ``residual_norm``: the residual add runs inside the next RMSNorm (``fused_add_rms_norm``; TensorRT-LLM's
  residual + RMSNorm fusion).
- ``attention = N``: the attention core is N kernels (the KV-cache write and one fused attention kernel: 2).

``kernel_shares`` turns that into a factor per operator role on the ledger's kernels (1 where nothing is fused);
``op_kernels`` is the kernels one ledger operator stands for under it. The shares depend on the model's shape
(MLA or not, gated FFN or not), so they are worked out for the model the profile runs (``compat.runnable``).
"""

from __future__ import annotations

from ..ledger import ATTENTION_KERNELS, Role

GATED_PROJECTIONS = 3          # gate, up, down: two kernels once gate and up are one GEMM
QKV_PROJECTIONS = 3            # q, k, v: one kernel
MLA_PROJECTIONS = 4            # q_a, q_b, kv_a, kv_b: three kernels once q_a and kv_a are one GEMM
FUSIONS = ("qkv", "gate_up", "residual_norm")


def kernel_shares(kernels: dict, spec) -> tuple:
    """((role value, share of the ledger's kernels launched), ...) for an engine's capabilities ``kernels`` table
    and a model; () where the engine fuses nothing the ledger lists."""
    fused = set(kernels.get("fused", ()))
    unknown = fused - set(FUSIONS)
    if unknown:
        raise ValueError(f"capabilities.toml kernels.fused: unknown fusion(s) {sorted(unknown)} (known: {FUSIONS})")
    if spec is None or not (fused or "attention" in kernels):
        return ()
    out = {}
    if "qkv" in fused:
        if spec.is_mla:
            if spec.q_lora_rank:
                out[Role.QKV] = (MLA_PROJECTIONS - 1) / MLA_PROJECTIONS
        else:
            out[Role.QKV] = 1 / QKV_PROJECTIONS
    if "gate_up" in fused and spec.gated_mlp:
        for role in (Role.MLP, Role.EXPERTS, Role.SHARED_EXPERTS):
            out[role] = (GATED_PROJECTIONS - 1) / GATED_PROJECTIONS
    if "residual_norm" in fused:
        out[Role.ATTN_RESIDUAL] = out[Role.FFN_RESIDUAL] = 0.0
    if "attention" in kernels:
        out[Role.ATTN_CORE] = kernels["attention"] / ATTENTION_KERNELS
    return tuple((role.value, share) for role, share in out.items())


def op_kernels(engine, op) -> float:
    """Kernels the ledger operator ``op`` (all its layers) launches under ``engine``'s fusions."""
    shares = getattr(engine, "kernel_shares", ())
    if shares:
        for role, share in shares:
            if role == op.role.value:
                return op.kernels * op.count * share
    return op.kernels * op.count
