"""One engine instance (a worker) of a serving layout: its devices, its step cost, its KV pool.

A worker spans ``tp x pp`` GPUs (``tokspeed.scale`` times passes over that layout: TP all-reduces, pipeline
hand-offs), or, for a MoE model with expert parallelism, ``ep`` GPUs that hold ``1/ep`` of the routed
experts each while attention runs on groups of ``tp`` GPUs, ``dp`` such groups side by side (attention
data parallelism, ``ep = tp x dp``; ``tokspeed.serving.expert``).

KV pool (tokens): per GPU, the engine's share of memory (``memory_fraction`` of the whole device, or of
what the weights leave for TensorRT-LLM) less the weights it holds, the activation workspace and the
runtime, divided by the KV bytes one cached token takes on it (its TP share of KV heads, all of MLA's
latent on every TP rank; ``1/pp`` of the layers), times the ``dp`` attention groups.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engines.compat import runtime_of
from ..errors import UserError
from ..ledger import weight_ledger
from ..memory import activation_bytes, kv_bytes
from ..scale.layout import kv_share
from ..scale.options import ScaleOptions
from ..workload import UBATCH, Workload
from .attention_dp import rank_budget, rank_straggler
from .engine_versions import version_tuple
from .expert import expert_time_ops
from .fitted import engine_seconds
from .schedulers import Scheduler, host_hidden, scheduler_for
from .steptime import StepCost


@dataclass(frozen=True)
class Parallelism:
    tp: int = 1
    pp: int = 1
    ep: int = 1          # GPUs the routed experts are spread over (1: experts follow TP)
    dp: int = 1          # attention data-parallel groups inside the worker (ep = tp x dp)

    def __post_init__(self):
        for k in ("tp", "pp", "ep", "dp"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 4096:
                raise UserError(f"parallel degree {k} must be an integer in [1, 4096], got {v!r}")
        if self.dp > 1 and self.ep != self.tp * self.dp:
            raise UserError(f"attention data parallelism dp={self.dp} needs ep = tp x dp = {self.tp * self.dp}, "
                            f"got ep={self.ep}")
        if self.ep > 1 and self.ep % self.tp:
            raise UserError(f"ep={self.ep} must be a multiple of tp={self.tp}")

    @property
    def gpus(self) -> int:
        return max(self.tp * self.dp, self.ep) * self.pp

    def to_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "ep": self.ep, "dp": self.dp}


@dataclass
class Worker:
    cost: StepCost
    kv_tokens: float
    gpus: int
    par: Parallelism
    resolved: object          # the predict ``Resolved`` of the attention group (tp x pp)
    weights_per_gpu: float
    lead_tokens: float = 0.0  # tokens before a streaming client sees text (serving constants; metrics.client_view)


def resolve_group(resolver, model, hardware, engine, quant, kv_dtype, tp: int, pp: int, engine_version=None):
    """``resolver``'s resolution (``prediction_setup.resolve``, passed in by ``tokspeed.serving_api``: the
    serving package never imports predict's setup) of one tp x pp group (model, device, engine, layout timer), on the device
    as the engine computes on it (``gemm_device.gemm_hardware``, applied by ``resolve`` once the format is settled). ``engine_version`` picks a llama.cpp era; a serving
    engine's release (SGLang ``0.4.1``) only says which of its behaviours apply (``serving.unmodelled``)."""
    n = tp * pp
    opts = ScaleOptions(gpus=n, parallel=f"tp={tp},pp={pp}" if n > 1 else None)
    hw = hardware             # resolve takes the device as the engine computes on it (gemm_device), quant settled
    era = engine_version
    if engine_version is not None and isinstance(engine, str) and runtime_of(engine) != "llama.cpp":
        if version_tuple(engine_version) is None:
            raise UserError(f"engine_version {engine_version!r} is not a release number of {engine}",
                            "write it as the release is numbered, e.g. 0.4.1", field="engine_version")
        era = None
    r = resolver(model, hw, quant, kv_dtype, engine, era, opts, Workload(prompt=0, gen=1))
    return full_attention(r) if not scheduler_for(r.profile.name).sliding_window else r


def full_attention(r):
    """``r`` with its sliding-window layers attending (and caching) the full context: an engine that applies
    no window by default (``schedulers.toml``: TensorRT-LLM). A chunked-attention model keeps its chunks."""
    spec = r.spec
    if spec.n_sliding_layers and not spec.chunked_attention:
        r.spec = replace(spec, n_sliding_layers=0, sliding_window=0)
    return r


def collective_s(pt) -> float:
    """Seconds of a step's TP collectives (all-reduces) on the worker's links: the layout timer's link time
    (``tokspeed.scale.timing``: the link's rate and latency per all-reduce). The one place a step takes its collective
    term from, so a collectives model replaces it here."""
    return pt.link_s


def build_worker(r, par: Parallelism, sched: Scheduler, fitted: dict, context: int) -> Worker:
    """The worker of resolved group ``r`` under ``par``; ``fitted``: the engine's serving constants
    (``gpu_scale``, ``step_s``, ``link_scale``: the engine's collectives take that multiple of the link model's
    time); ``context``: a typical cached length (sliding windows hold less)."""
    spec = r.spec
    if par.ep > 1 and not spec.is_moe:
        raise UserError(f"{spec.id} has no routed experts: expert parallelism ep={par.ep} does not apply")

    link_scale = fitted.get("link_scale", 1.0)

    def plain(ops, batch, n):
        pt = r.timer(ops, r.profile, batch, n)
        link_s = collective_s(pt)
        return engine_seconds(pt.seconds - pt.link_s + link_s, link_s=link_s, link_scale=link_scale)

    time_ops = expert_time_ops(r, par, link_scale) if par.ep > 1 else plain
    cost = StepCost(spec, r.storage, r.kv_elem_bytes, time_ops, gpu_scale=fitted.get("gpu_scale", 1.0),
                    step_s=0.0 if host_hidden(sched, par.pp) else fitted.get("step_s", 0.0))
    if par.dp > 1:                           # the step waits for the rank that holds the prompt tokens
        cost.straggler = rank_straggler(cost, r, rank_budget(sched, par.dp), par.dp)
    if getattr(sched, "graph_max", 0):       # each attention rank pads its own rows to a captured size
        dp = par.dp
        cost.pad = lambda b: sched.graph_batch(-(-b // dp)) * dp
    led = weight_ledger(spec, r.storage)
    experts = sum(led.experts_per_layer)
    other = r.weights_bytes - experts
    ep = par.ep if par.ep > 1 else par.tp
    w_gpu = (other / par.tp + experts / ep) / par.pp
    hw = r.hw
    cap = hw.usable_bytes
    rest = activation_bytes(spec, 1, UBATCH) + r.profile.runtime_overhead_gib * 2**30
    if sched.memory_fraction_of == "free":
        free = sched.memory_fraction * (cap - w_gpu - rest)
    else:
        free = sched.memory_fraction * cap - w_gpu - rest
    ctx = max(context, 1)
    per_token = kv_bytes(spec, r.kv_elem_bytes, 1, ctx) / ctx * kv_share(spec, par.tp) / par.pp
    kv_tokens = max(0.0, free) / per_token * par.dp if per_token > 0 else float("inf")
    return Worker(cost, kv_tokens, par.gpus, par, r, w_gpu, fitted.get("lead_tokens", 0.0))
