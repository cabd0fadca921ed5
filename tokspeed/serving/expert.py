"""Expert parallelism and attention data parallelism for MoE models (DeepSeek-V3, Mixtral, Qwen3-MoE...).

A worker of ``ep`` GPUs: the routed experts are split ``ep`` ways (each GPU holds ``E / ep`` whole
experts); attention, the dense layers, the shared experts, the router and the LM head run on ``dp`` groups
of ``tp`` GPUs, each group on its own ``1/dp`` of the sequences with its own copy of those weights
(``dp = 1``: TP attention over all of them, experts EP-sharded: "TP + EP").

A pass over T tokens then takes, as vLLM, SGLang and TensorRT-LLM run it:
- the non-expert operators over ``T / dp`` tokens on a ``tp`` group (the setup's layout timer: TP
  all-reduces included), their FLOPs, activations and KV traffic cut by ``dp``, weights not;
- the routed-expert operators over all T tokens, FLOPs, activations and weight bytes cut by ``ep``
  (experts touched are those of the whole batch: ``attended.expected_experts(T)``, each on one GPU);
- how a MoE layer's tokens reach their experts and come back:
  - ``ep = tp`` (TP + EP, ``dp = 1``): after attention's all-reduce every rank of the group holds every
    token, so each runs its own experts on the tokens routed to them and the layer's output is summed by the
    TP all-reduce that follows the MLP (vLLM ``FusedMoEParallelConfig.use_all2all_kernels`` is ``dp_size > 1 and
    use_ep``; SGLang's EP MoE without DeepEP; TensorRT-LLM without attention DP). That all-reduce is the
    second of the layout timer's two per layer: no all-to-all;
  - ``ep > tp`` (attention DP + EP): the tokens of every attention group reach the experts and come back
    as the engines do by default: an all-gather of every group's hidden states to every EP rank and a
    reduce-scatter of the expert outputs, BF16 (TensorRT-LLM's attention-DP MoE without its MNNVL
    all-to-all; vLLM 0.13 ``VLLM_ALL2ALL_BACKEND=allgather_reducescatter``; SGLang 0.5.6
    ``moe_a2a_backend="none"``): each GPU receives ``(ep - 1) / ep x T x d_model x 2 bytes`` in each, per
    MoE layer (``tokspeed.scale.collectives``: latency and rate per fabric). DeepEP's kernels (an all-to-all
    of the ``k`` routed copies, FP8 dispatch and BF16 combine) are ``deepep_exchange_s``. No all-reduce after
    the expert GEMMs on those layers (``moe_link_share``: the timer's all-reduces of a MoE layer's MLP are
    taken off); attention keeps its TP all-reduce.
"""

from __future__ import annotations

from dataclasses import replace

from ..ledger import Role
from ..scale.collectives import all_to_all_s as a2a_s
from ..scale.collectives import allgather_s, deepep_efficiency, fabric, reducescatter_s
from ..scale.interconnect import device_link
from ..timing import pass_time
from .moe_routing import routing_skew

EXPERT_ROLES = frozenset({Role.EXPERTS, Role.EXPERTS_ACT})
DISPATCH_BYTES = 1.0      # FP8 dispatch (DeepEP low-latency / normal kernels)
COMBINE_BYTES = 2.0       # BF16 combine
GATHER_BYTES = 2.0        # BF16 hidden states all-gathered, expert outputs reduce-scattered


def _cut(op, f: float, weights: bool):
    return replace(op, flops=op.flops * f, act_bytes=op.act_bytes * f, kv_read_bytes=op.kv_read_bytes * f,
                   kv_write_bytes=op.kv_write_bytes * f, weight_bytes=op.weight_bytes * (f if weights else 1.0))


def moe_exchange_s(spec, link, tokens: float, ep: int, hw=None) -> float:
    """A MoE pass's exchange of ``tokens`` tokens over ``ep`` GPUs: the all-gather of their hidden states and
    the reduce-scatter of the outputs, per MoE layer."""
    if ep <= 1 or link is None:
        return 0.0
    f = fabric(link, ep, hw)
    m = tokens * spec.d_model * GATHER_BYTES
    return spec.n_moe_layers * (allgather_s(f, m, ep) + reducescatter_s(f, m, ep))


def deepep_exchange_s(spec, link, tokens: float, ep: int, hw=None) -> float:
    """DeepEP's normal kernels: each GPU dispatches its ``tokens / ep`` tokens' ``k`` routed copies (FP8) and
    combines them back (BF16), an all-to-all each, at DeepEP's measured share of the link, per MoE layer."""
    if ep <= 1 or link is None:
        return 0.0
    f = fabric(link, ep, hw)
    copies = tokens / ep * spec.n_active_experts * spec.d_model
    eff = deepep_efficiency()
    return spec.n_moe_layers * (a2a_s(f, copies * DISPATCH_BYTES, ep, eff) + a2a_s(f, copies * COMBINE_BYTES, ep, eff))


def moe_link_share(spec, syncs_per_layer: int = 2) -> float:
    """Share of a TP layout's all-reduces (``syncs_per_layer`` a layer, the last after the MLP) that combine
    a MoE layer's MLP: the ones an all-to-all's combine replaces."""
    return spec.n_moe_layers / (syncs_per_layer * spec.n_layers) if spec.n_layers else 0.0


def expert_time_ops(r, par, link_scale: float = 1.0):
    """``time_ops(ops, batch, n_tokens) -> seconds`` of a worker with experts over ``par.ep`` GPUs; its link
    times x ``link_scale`` (the engine's fitted collective efficiency). The routed experts take the measured skew of
    real routing over even routing (``moe_routing.routing_skew``); the attention ranks' tokens are even shares here,
    the busiest rank's excess is ``attention_dp.rank_straggler``'s."""
    spec, hw, prof, quant = r.spec, r.hw, r.profile, r.quant
    link = device_link(hw, par.ep)
    dp, ep = par.dp, par.ep
    setup = getattr(r, "setup", None)
    syncs = setup.layout.syncs_per_layer if setup is not None else 2
    a2a = ep > par.tp            # tokens not on every EP rank already (attention DP): dispatched to their experts

    def time_ops(ops, batch, n):
        tokens = batch * n
        attn = [_cut(op, 1.0 / dp, False) if dp > 1 else op for op in ops if op.role not in EXPERT_ROLES]
        experts = [_cut(op, 1.0 / ep, True) for op in ops if op.role in EXPERT_ROLES]
        b_dp, n_dp = (max(1, -(-batch // dp)), n) if n == 1 else (batch, max(1, -(-n // dp)))
        pt = r.timer(attn, prof, b_dp, n_dp)
        t = pt.seconds + (link_scale - 1.0) * pt.link_s
        if a2a:              # the MoE layers' MLP all-reduces give way to the all-to-all
            t -= link_scale * pt.link_s * moe_link_share(spec, syncs)
        if experts:
            # the routed experts as a trained router loads the ranks: the step waits for the hottest (moe_routing)
            skew = routing_skew(ep, tokens, spec.n_active_experts, spec.n_experts)
            t += skew * (pass_time(experts, hw, prof, quant, tokens, False).seconds - prof.fixed_s)   # a list
            if a2a:
                t += link_scale * moe_exchange_s(spec, link, tokens, ep, hw)
        return t

    return time_ops
