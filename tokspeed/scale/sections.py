"""The JSON sections the scale options add to a prediction: ``devices``, ``parallel``, ``offload``,
``serving`` and ``cost``. Existing keys keep their meaning (``decode.tok_s`` is per sequence)."""

from __future__ import annotations

from ..engines.backends import copies_through_host
from ..ledger import forward_ops
from ..workload import UBATCH
from .collectives import engine_allreduce
from .interconnect import ring_allreduce_bytes
from .offload import vram_vs_host_ratio, weights_in_ram_bytes
from ..serving.curve import (batch_curve, continuous_batching, cost, default_batches, ridge_batch,
                      weight_matmul_bound)
from .timing import pipelines_prompt


def scale_sections(r, mem, decode, prefill, first, work) -> dict:
    """``r``: the prediction's ``Resolved`` setup; ``work``: its ``Workload``."""
    setup, spec, storage, kvb, hw, prof, timer = r.setup, r.spec, r.storage, r.kv_elem_bytes, r.hw, r.profile, r.timer
    opts = r.scale
    layout = setup.layout if setup else None
    out = {"devices": _devices(setup, mem, hw), "parallel": _parallel(layout, spec, prof)}
    n_gpus = out["devices"]["count"]
    if layout is not None and layout.offload != "none":
        out["offload"] = _offload(layout, spec, storage, hw, first)

    aggregate = decode.aggregate_tok_s
    if opts.wants_serving:
        users, rate, prompt, gen = opts.users, opts.rate, work.prompt, work.gen
        depth = work.context + prompt + gen // 2

        def step(b):
            return timer(forward_ops(spec, storage, kvb, b, 1, depth), prof, b, 1)

        def step_s(b):
            return step(b).seconds

        if not hw.matmul_flops:
            t_pf = None          # prefill is compute bound and this device has no FLOP/s figure
        elif prompt and prefill.seconds:
            t_pf = prefill.seconds / (work.batch * prompt)
        else:
            t_pf = timer(forward_ops(spec, storage, kvb, 1, UBATCH, depth), prof, 1, UBATCH).seconds / UBATCH

        def matmul_bound(b):
            return weight_matmul_bound(forward_ops(spec, storage, kvb, b, 1, depth), hw, prof, r.quant, b)

        serving = {"max_batch": mem.max_batch, "ridge_batch": ridge_batch(matmul_bound),
                   "step_bound_at_max_batch": step(max(mem.max_batch, 1)).bound,
                   "decode_depth": depth, "prefill_s_per_token": t_pf,
                   "batches": batch_curve(step_s, default_batches(min(mem.max_batch, 4096)), mem.max_batch)}
        if users is not None:
            u = int(users)
            s = step_s(u)
            serving["users"] = {"users": u, "per_user_tok_s": 1 / s, "aggregate_tok_s": u / s,
                                "fits": u <= mem.max_batch}
            aggregate = u / s
        if rate is not None and t_pf is None:
            serving["continuous"] = {"rate_rps": float(rate), "stable": None,
                                     "reason": f"{hw.id} has no FLOP/s figure: prefill time unknown"}
        elif rate is not None:
            cb = continuous_batching(step_s, t_pf, prompt, gen, float(rate), mem.max_batch, prof.name)
            serving["continuous"] = cb
            if cb.get("stable"):
                aggregate = cb["aggregate_tok_s"]
        out["serving"] = serving
    power = (hw.tdp_w or 0) * n_gpus
    out["cost"] = cost(aggregate, power, opts.price_per_hour)
    out["cost"]["at_aggregate_tok_s"] = aggregate
    return out


def _devices(setup, mem, hw) -> dict:
    if setup is not None:
        return setup.devices_dict()
    row = {"name": "gpu0" if hw.kind == "gpu" else hw.kind, "kind": hw.kind, "hardware": hw.id, "count": 1,
           "weights_bytes": mem.weights_bytes, "kv_bytes": mem.kv_bytes, "activations_bytes": mem.activations_bytes,
           "overhead_bytes": mem.overhead_bytes, "capacity_bytes": mem.capacity_bytes, "total_bytes": mem.total_bytes,
           "fits": mem.fits}
    return {"count": 1, "per_device": [row]}


def _parallel(layout, spec, prof=None) -> dict:
    if layout is None or layout.offload != "none":
        return {"style": "none", "tp": 1, "pp": 1, "n_devices": 1}
    par = layout.parallel
    out = par.to_dict()
    if layout.link is not None and layout.row_split:
        out["tp_link"] = layout.link.to_dict()
        out["row_split"] = True
        out["syncs_per_token"] = layout.syncs_per_layer * spec.n_layers
    elif layout.link is not None:
        out["tp_link"] = layout.link.to_dict()
        msg = spec.d_model * 2.0
        out["allreduce_message_bytes_per_token"] = msg
        out["allreduces_per_token"] = layout.syncs_per_layer * spec.n_layers
        out["allreduce_bytes_per_token_per_device"] = (layout.syncs_per_layer * spec.n_layers
                                                       * ring_allreduce_bytes(msg, par.tp))
        one = engine_allreduce(layout.link, layout.stages[0].hw, getattr(prof, "name", ""), msg, par.tp, 1)
        if one is not None:          # a serving engine's own choice at one token's message (collectives.py)
            out["allreduce_algorithm"] = one.algorithm
            out["allreduce_us"] = one.seconds * 1e6
    if layout.pipe_link is not None and par.pp > 1:
        out["pipeline_link"] = layout.pipe_link.to_dict()
        out["handoff_bytes_per_token"] = spec.d_model * layout.handoff_value_bytes
        out["stages"] = [{"name": s.name, "layers": list(s.layers), "tp": s.tp} for s in layout.stages]
        # Vulkan / ROCm hand a hidden state over through host memory, blocking, and do not pipeline the prompt
        out["handoff_via_host"] = copies_through_host(getattr(prof, "name", ""))
        out["prompt_pipelined"] = pipelines_prompt(layout, prof)
    return out


def _offload(layout, spec, storage, hw, first) -> dict:
    stages = getattr(first, "stages", [])
    cpu = layout.cpu_hw
    return {"mode": layout.offload, "gpu_layers": layout.gpu_layers, "n_layers_with_output": spec.n_layers + 1,
            "cpu": cpu.id if cpu is not None else None,
            "cpu_bandwidth_gbps": cpu.bandwidth_gbps if cpu is not None else None,
            "host_link": layout.host.to_dict() if layout.host else None,
            "vram_vs_host_link": vram_vs_host_ratio(hw),
            "vram_vs_cpu_ram": hw.bandwidth_gbps / cpu.bandwidth_gbps if cpu is not None else None,
            "weights_in_ram_bytes": weights_in_ram_bytes(spec, storage, layout),
            "decode_seconds_by_stage": stages}
