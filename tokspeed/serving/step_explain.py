"""Where one serving step's time goes, per GPU of a worker and per kernel family: the GEMMs that read the
weights, attention over the KV cache, the MoE experts (with their all-to-all under expert parallelism),
norms and activations, the collectives (TP all-reduces), the graph replay / kernel launches and fixed
per-pass time, the host time per step the engine does not hide, and under attention data parallelism the
wait for the rank that holds a prompt (``attention_dp.rank_straggler``).

Each family's time is its marginal in the worker's step timer (``StepCost.time_ops``: the family's
operators alone minus an empty pass), split into kernel time and launches with the layout timer's
counts; the empty pass is the fixed per-pass time plus the collectives (``link_scale`` x the link
model's time). Device parts are scaled by the engine's fitted ``gpu_scale``; host time ``step_s`` adds.
So the parts sum to the step by construction, and ``simulator_s`` (the simulator's own step for the same
rows, through its interpolated grids and affine attention) checks it.

With a load (``--concurrency`` / ``--rate``), the step is explained at the run's mean decoding batch and
the TTFT and TPOT percentiles are split into the step alone and the rest (queueing, prompt chunks that
share decode steps, a disaggregated request's prefill queue and KV transfer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ledger import PassOps, Role, forward_ops
from .document import layout_text
from .fitted import fitted_for
from .run import evaluate
from .worker import Parallelism

FAMILIES = (
    ("GEMM (weights)", frozenset({Role.QKV, Role.O_PROJ, Role.MLP, Role.LINEAR_PROJ, Role.LM_HEAD,
                                  Role.SHARED_EXPERTS, Role.ROUTER, Role.PER_LAYER})),
    ("attention (KV)", frozenset({Role.ATTN_CORE, Role.ROPE, Role.STATE_SCAN})),
    ("MoE experts", frozenset({Role.EXPERTS, Role.EXPERTS_ACT})),
    ("norms, activations, embed, sampling", None),       # every other role
)


@dataclass(frozen=True)
class Part:
    name: str
    seconds: float

    def to_dict(self) -> dict:
        return {"name": self.name, "ms": self.seconds * 1e3}


@dataclass
class StepBreakdown:
    kind: str                     # "decode" | "prefill"
    rows: int                     # decode rows (padded to a CUDA-graph size) or prompt tokens
    context: int                  # cached tokens per decode row
    parts: list[Part]
    simulator_s: float            # the simulator's step for the same rows

    @property
    def total_s(self) -> float:
        return sum(p.seconds for p in self.parts)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "rows": self.rows, "context": self.context, "total_ms": self.total_s * 1e3,
                "simulator_ms": self.simulator_s * 1e3, "parts": [p.to_dict() for p in self.parts]}


@dataclass
class LatencySplit:
    """A latency percentile split into the explained step(s) and the rest."""
    metric: str                   # "TTFT p50" ...
    seconds: float
    step_s: float                 # the explained step's share (a prompt alone; one decode step)
    parts: list[Part] = field(default_factory=list)   # the rest, named

    def to_dict(self) -> dict:
        return {"metric": self.metric, "ms": self.seconds * 1e3, "step_ms": self.step_s * 1e3,
                "rest": [p.to_dict() for p in self.parts]}


def _family(op, roles) -> bool:
    if roles is not None:
        return op.role in roles
    return not any(r is not None and op.role in r for _, r in FAMILIES)


def breakdown(worker, fitted: dict, *, decode_rows: int = 0, context: int = 0, prompt: int = 0) -> StepBreakdown:
    """The step of ``worker`` (``worker.build_worker``) with ``decode_rows`` sequences at ``context``
    cached tokens each, or (``prompt`` > 0) one prompt of that many tokens alone."""
    r, cost = worker.resolved, worker.cost
    if prompt:
        batch, n, rows, kv_total = 1, prompt, prompt, 0.0
        ops = forward_ops(r.spec, r.storage, r.kv_elem_bytes, 1, prompt, 0)
        sim = cost.step(0, prompt, 0.0, cost.prefill_pairs([(prompt, 0)]))
    else:
        rows = cost.pad(decode_rows) if cost.pad is not None else decode_rows
        batch, n, kv_total = rows, 1, float(decode_rows * context)
        dense = forward_ops(r.spec, r.storage, r.kv_elem_bytes, rows, 1, context)
        attn = forward_ops(r.spec, r.storage, r.kv_elem_bytes, decode_rows, 1, context)
        ops = [o for o in dense if o.role != Role.ATTN_CORE] + [o for o in attn if o.role == Role.ATTN_CORE]
        sim = cost.step(decode_rows, 0, kv_total, 0.0)
    empty_pt = r.timer(PassOps(), r.profile, batch, n)
    empty = cost.time_ops(PassOps(), batch, n)
    link = fitted.get("link_scale", 1.0) * empty_pt.link_s
    launches = empty - link
    parts = []
    for name, roles in FAMILIES:
        sub = PassOps([o for o in ops if _family(o, roles)])
        if not sub:
            continue
        pt = r.timer(sub, r.profile, batch, n)
        launch = pt.overhead_s - empty_pt.overhead_s
        parts.append(Part(name, cost.time_ops(sub, batch, n) - empty - launch))
        launches += launch
    parts += [Part("collectives", link), Part("graph replay / launches / fixed", launches)]
    if prompt and getattr(cost, "straggler", None) is not None:     # attention DP: the rank holding the prompt
        parts.append(Part("busiest attention-DP rank (a prompt is not split)", cost.straggler(prompt)))
    g = cost.gpu_scale
    parts = [Part(p.name, p.seconds * g) for p in parts] + [Part("host (not hidden)", cost.step_s)]
    return StepBreakdown("prefill" if prompt else "decode", rows, context, parts, sim)


@dataclass
class ServingExplanation:
    """One layout's serving step explained: the decode step (at ``--batch`` rows, or the run's mean
    decoding batch per instance under a load), the prompt step (ISL tokens alone) and, under a load, the
    TTFT and TPOT percentiles split into those steps and the rest; ``config``: the run (``evaluate``)."""
    layout: str
    gpus_per_worker: int
    decode: StepBreakdown
    prefill: StepBreakdown
    latencies: list[LatencySplit]
    config: object                # result.ServingConfig, None at a stated batch

    def to_dict(self) -> dict:
        return {"layout": self.layout, "gpus_per_worker": self.gpus_per_worker, "decode": self.decode.to_dict(),
                "prefill": self.prefill.to_dict(), "latencies": [x.to_dict() for x in self.latencies],
                "config": self.config.to_dict() if self.config is not None else None}


def explain_serving(setup, par, replicas: int, load, disagg=None, batch: int = 0,
                    context: int | None = None) -> ServingExplanation:
    """Explain ``setup`` served on ``par`` x ``replicas`` (or ``disagg``): at ``batch`` decode rows (no
    simulation), else under ``load`` (``run.Load``)."""
    dec_par = Parallelism(tp=disagg.decode_tp) if disagg is not None else par
    pf_par = Parallelism(tp=disagg.prefill_tp) if disagg is not None else par
    w, _ = setup.worker(dec_par)
    pf_w, _ = setup.worker(pf_par)
    fit = setup.fitted if setup.fitted is not None else fitted_for(w.resolved.profile.name, w.resolved.hw.vendor)
    ctx = setup.isl + setup.osl // 2 if context is None else context      # a decoding row's mean cached tokens
    cfg = None
    if not batch:
        cfg = evaluate(setup, par, replicas, load, None, disagg)
        per = disagg.decode_workers if disagg is not None else 1
        batch = max(1, round(cfg.mean_running / per))
    dec = breakdown(w, fit, decode_rows=batch, context=ctx)
    pf = breakdown(pf_w, fit, prompt=max(1, setup.isl))
    lays = [] if cfg is None else _latencies(cfg, dec, pf, w.lead_tokens)
    lay = layout_text({**dec_par.to_dict(), "replicas": 1 if disagg is not None else replicas,
                       "disagg": disagg.to_dict() if disagg is not None else None})
    return ServingExplanation(lay, w.gpus, dec, pf, lays, cfg)


def _latencies(cfg, dec: StepBreakdown, pf: StepBreakdown, lead_tokens: float = 0.0) -> list[LatencySplit]:
    out = []
    ttft = (cfg.ttft_ms.p50 or 0.0) / 1e3
    # the tokens a streaming client waits for before its first text (metrics.client_view), at the p50 TPOT
    lead = [Part(f"{lead_tokens:g} tokens before the client's first text", lead_tokens * (cfg.tpot_ms.p50 or 0.0) / 1e3)
            ] if lead_tokens else []
    shown = sum(p.seconds for p in lead)
    if cfg.prefill_ms is not None:       # disaggregated: prefill queue, KV transfer, decode admission
        pre = (cfg.prefill_ms.p50 or 0.0) / 1e3
        kv = (cfg.kv_wait_ms.p50 or 0.0) / 1e3
        rest = [Part("prefill queue", max(0.0, pre - pf.total_s)), Part("KV transfer (link wait included)", kv),
                Part("decode admission and first step", max(0.0, ttft - pre - kv - shown))] + lead
    else:
        rest = [Part("queueing and steps shared with other sequences", max(0.0, ttft - pf.total_s - shown))] + lead
    out.append(LatencySplit("TTFT p50", ttft, pf.total_s, rest))
    tpot = (cfg.tpot_ms.p50 or 0.0) / 1e3
    if tpot:
        out.append(LatencySplit("TPOT p50", tpot, dec.total_s,
                                [Part("prompt chunks or prefill steps between decodes", tpot - dec.total_s)]))
    return out
