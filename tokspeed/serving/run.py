"""Evaluate one serving configuration: a layout (workers x replicas, or disaggregated prefill/decode),
a load (offline, fixed concurrency, request rate, recorded trace), and the metrics of ``metrics``.

Replicas (data parallelism across engine instances) share the load evenly: one replica is simulated at
``1/replicas`` of the concurrency, rate or requests, and its throughput multiplied.

Disaggregated prefill/decode (``Disagg``): ``prefill_workers`` engines of ``prefill_tp`` GPUs only prefill,
``decode_workers`` engines of ``decode_tp`` GPUs only decode, simulated together (``simulate.simulate_disagg``):
a request waits for the least-loaded prefill worker, its KV cache waits for that worker's link and crosses
it (``kv bytes / link rate``; across servers the network link), then it waits for admission on the
least-loaded decode worker, whose first step with it returns the first token. TTFT and E2E run from the
request's arrival at the prefill pool, so throughput, requests in flight and E2E obey Little's law.
Pools of ``g = gcd(P, D)`` equal units (routers spread the load evenly) are simulated as one unit of
``P/g`` prefill and ``D/g`` decode workers at ``1/g`` of the load, as replicas are.

Attention data parallelism: the limits hold per attention rank (``attention_dp.instance_scheduler``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import UserError
from ..memory import kv_bytes
from ..scale.interconnect import device_link
from .attention_dp import instance_scheduler
from .fitted import fitted_for
from .metrics import SLO, spread, summarize
from .requests import Arrivals, Request, lengths, make_requests
from .result import ServingConfig, Spread
from .schedulers import Scheduler, scheduler_for
from .instance import Instance
from .simulate import Pools, simulate, simulate_disagg
from .speculative import Speculation, attach
from .unmodelled import UNMEASURED, WARNINGS, not_modelled
from .worker import Parallelism, build_worker, resolve_group

DEFAULT_REQUESTS = {"offline": 1000, "rate": 500}
MAX_DEFAULT_REQUESTS = 20_000   # a closed loop's default requests: 8 per client up to this
MIN_CLOSED_LOOP = 8          # requests per client in a fixed-concurrency run (at least 64 in all)


@dataclass(frozen=True)
class Disagg:
    prefill_workers: int
    prefill_tp: int
    decode_workers: int
    decode_tp: int

    def __post_init__(self):
        for k in ("prefill_workers", "prefill_tp", "decode_workers", "decode_tp"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 4096:
                raise UserError(f"disaggregation {k} must be an integer in [1, 4096], got {v!r}")

    @property
    def gpus(self) -> int:
        return self.prefill_workers * self.prefill_tp + self.decode_workers * self.decode_tp

    def to_dict(self) -> dict:
        return {"prefill_workers": self.prefill_workers, "prefill_tp": self.prefill_tp,
                "decode_workers": self.decode_workers, "decode_tp": self.decode_tp}


@dataclass(frozen=True)
class Load:
    scenario: str                 # offline | concurrency | rate | trace
    concurrency: int = 0
    rate_rps: float = 0.0
    n_requests: int | None = None
    poisson: bool = True
    seed: int = 0
    trace: tuple = ()             # Requests of a recorded run


_GROUPS: dict = {}      # resolved groups by (model, device, engine, formats) when given by name (fits, tests)


@dataclass
class Setup:
    """What is served and on what: fixed across the layouts of a search."""
    model: object
    hardware: object
    engine: str
    quant: str | None = None
    kv_dtype: str = "f16"
    isl: int = 1024
    osl: int = 256
    length_ratio: float = 1.0
    prefix_hit: float = 0.0
    engine_version: str | None = None
    speculation: Speculation | None = None
    sched_overrides: dict = field(default_factory=dict)
    fitted: dict | None = None            # serving constants (default: the engine's fitted ones)
    resolver: object = None               # prediction_setup.resolve (``serving_api.make_setup`` passes it)
    _groups: dict = field(default_factory=dict, repr=False)
    _workers: dict = field(default_factory=dict, repr=False)

    def group(self, tp: int, pp: int):
        key = (tp, pp)
        if key not in self._groups:
            if self.resolver is None:
                raise ValueError("Setup needs a resolver: build it with tokspeed.serving_api.make_setup")
            self._groups[key] = _GROUPS.get((self._key(), key)) or resolve_group(
                self.resolver, self.model, self.hardware, self.engine, self.quant, self.kv_dtype, tp, pp,
                self.engine_version)
            if isinstance(self.model, str) and isinstance(self.hardware, str):
                if len(_GROUPS) > 256:
                    _GROUPS.clear()
                _GROUPS[(self._key(), key)] = self._groups[key]
        return self._groups[key]

    def _key(self):
        return (self.model, self.hardware, self.engine, self.quant, self.kv_dtype, self.engine_version)

    def scheduler(self, r) -> Scheduler:
        return scheduler_for(r.profile.name, self.engine_version).with_(**self.sched_overrides)

    def worker(self, par: Parallelism):
        if par not in self._workers:
            r = self.group(par.tp, par.pp)
            fit = self.fitted if self.fitted is not None else fitted_for(r.profile.name, r.hw.vendor)
            w = build_worker(r, par, self.scheduler(r), fit, self.isl + self.osl)
            tps = 1.0
            if self.speculation is not None:
                draft = None
                if self.speculation.kind == "draft":
                    draft = build_worker(resolve_group(self.resolver, self.speculation.draft_model, self.hardware, self.engine,
                                                       self.quant, self.kv_dtype, par.tp, par.pp,
                                                       self.engine_version), Parallelism(par.tp, par.pp),
                                         self.scheduler(r), fitted_for(r.profile.name, r.hw.vendor), self.isl + self.osl).cost
                tps = attach(w.cost, self.speculation, r.spec, draft)
                w.cost.step_s = fit.get("step_s", 0.0)       # speculative decoding turns SGLang's overlap off
            self._workers[par] = (w, tps)
        return self._workers[par]


def _requests(setup: Setup, load: Load, share: int, kind: str, n: int) -> list[Request]:
    if load.scenario == "trace":
        return [replace(r) for r in load.trace[::share]]
    sizes = lengths(n, setup.isl, setup.osl, setup.length_ratio, load.seed)
    arr = Arrivals(kind if kind != "trace" else "offline", n, concurrency=max(1, load.concurrency // share),
                   rate_rps=load.rate_rps / share if load.rate_rps else 0.0, poisson=load.poisson, seed=load.seed)
    return make_requests(arr, sizes)


def _n_requests(load: Load, per_replica_conc: int) -> int:
    if load.n_requests:
        return load.n_requests
    if load.scenario == "concurrency":
        return min(max(MIN_CLOSED_LOOP * per_replica_conc, 64), MAX_DEFAULT_REQUESTS)
    return DEFAULT_REQUESTS.get(load.scenario, 500)


def run_worker(setup: Setup, par: Parallelism, load: Load, share: int, *, osl_override=None, prefilled=False,
               arrivals=None):
    """Simulate one engine instance at ``1/share`` of the load; returns (Outcome, Worker)."""
    w, tps = setup.worker(par)
    r = w.resolved
    sched = instance_scheduler(setup.scheduler(r), par.dp)    # attention DP: per-rank limits x dp
    conc = max(1, math.ceil(load.concurrency / share)) if load.scenario == "concurrency" else 0
    n = max(1, math.ceil(_n_requests(load, conc) / (1 if load.scenario == "concurrency" else share)))
    reqs = arrivals if arrivals is not None else _requests(setup, load, share, load.scenario, n)
    if osl_override is not None:
        reqs = [replace(q, osl=osl_override(q)) for q in reqs]
    rows = setup.speculation.k + 1 if setup.speculation is not None else 1
    out = simulate(w.cost, sched, w.kv_tokens, reqs, concurrency=conc,
                   prefix_hit=1.0 if prefilled else setup.prefix_hit, tokens_per_step=tps, rows_per_seq=rows)
    return out, w


def evaluate(setup: Setup, par: Parallelism, replicas: int, load: Load, slo: SLO | None = None,
             disagg: Disagg | None = None) -> ServingConfig:
    """One config of the ``tokspeed serve`` JSON contract (plus diagnostics)."""
    if disagg is not None:
        return _evaluate_disagg(setup, disagg, load, slo)
    out, w = run_worker(setup, par, load, replicas)
    gpus = w.gpus * replicas
    m = summarize(out, w.gpus, slo, w.lead_tokens)
    m["output_tok_s"] *= replicas
    m["request_rate_rps"] *= replicas
    for k in ("goodput_rps", "goodput_tok_s"):
        if k in m:
            m[k] *= replicas
    conc = load.concurrency if load.scenario == "concurrency" else round(m["mean_running"] * replicas)
    layout = {**par.to_dict(), "replicas": replicas, "disagg": None}
    cfg = _config(layout, gpus, conc, load, m, w)
    flags = not_modelled(setup.engine, setup.engine_version, par)
    cfg.measured = not UNMEASURED.intersection(flags)
    cfg.warnings = [WARNINGS[f] for f in flags]
    return cfg


def _config(layout, gpus, conc, load, m, w) -> ServingConfig:
    prof = w.resolved.profile
    lo = max(prof.decode_error_pct, prof.prefill_error_pct) / 100 if prof else 0.3
    band = {"low": m["output_tok_s"] * (1 - min(lo, 0.9)), "high": m["output_tok_s"] * (1 + lo)}
    return ServingConfig(
        layout, gpus, conc, load.rate_rps if load.scenario == "rate" else None, m["output_tok_s"],
        m["output_tok_s"] / gpus, m["tok_s_per_user"], Spread.of(m["ttft_ms"]), Spread.of(m["tpot_ms"]),
        Spread.of(m["itl_ms"]), Spread.of(m["e2e_s"]), m["meets_slo"], band, w.kv_tokens, m["mean_running"],
        m["preemptions"], m["requests"], m["e2e_mean_s"], m["duration_s"], goodput_rps=m.get("goodput_rps"),
        goodput_tok_s=m.get("goodput_tok_s"), slo_misses=m.get("slo_misses", []), stopped=m.get("stopped"))


def kv_transfer_s(setup: Setup, r, isl: int, n_gpus: int) -> float:
    """Seconds to move one prompt's KV cache from a prefill worker to a decode worker."""
    nbytes = kv_bytes(r.spec, r.kv_elem_bytes, 1, max(isl, 1))
    link = device_link(r.hw, max(n_gpus, 2))
    return nbytes / link.per_direction_bytes_s if link else 0.0


def _instances(setup: Setup, par: Parallelism, n: int, prefilled: bool) -> list[Instance]:
    w, tps = setup.worker(par)
    sched = instance_scheduler(setup.scheduler(w.resolved), par.dp)
    rows = setup.speculation.k + 1 if setup.speculation is not None and prefilled else 1
    return [Instance(w.cost, sched, w.kv_tokens, prefix_hit=1.0 if prefilled else setup.prefix_hit,
                     tokens_per_step=tps if prefilled else 1.0, rows_per_seq=rows) for _ in range(n)]


def _evaluate_disagg(setup: Setup, d: Disagg, load: Load, slo: SLO | None) -> ServingConfig:
    """Both pools simulated together (``simulate_disagg``): a request queues for a prefill worker, its KV
    cache for the worker's link, then for a decode worker's admission."""
    dec_par, pf_par = Parallelism(tp=d.decode_tp), Parallelism(tp=d.prefill_tp)
    dec_w = setup.worker(dec_par)[0]
    g = math.gcd(d.prefill_workers, d.decode_workers) if load.scenario != "trace" else 1
    unit = Disagg(d.prefill_workers // g, d.prefill_tp, d.decode_workers // g, d.decode_tp)
    conc = max(1, math.ceil(load.concurrency / g)) if load.scenario == "concurrency" else 0
    per_engine = max(1, math.ceil(conc / unit.decode_workers)) if conc else 0
    n = _n_requests(load, per_engine) * unit.decode_workers if conc else max(1, math.ceil(_n_requests(load, 0) / g))
    reqs = _requests(setup, load, g, load.scenario, n)
    xfer: dict = {}

    def transfer_s(q) -> float:
        if q.isl not in xfer:
            xfer[q.isl] = kv_transfer_s(setup, dec_w.resolved, q.isl, d.gpus)
        return xfer[q.isl]

    pools = Pools(_instances(setup, pf_par, unit.prefill_workers, False),
                  _instances(setup, dec_par, unit.decode_workers, True), transfer_s)
    out = simulate_disagg(pools, reqs, concurrency=conc)
    m = summarize(out, dec_w.gpus, slo, dec_w.lead_tokens)
    for k in ("output_tok_s", "request_rate_rps", "goodput_rps", "goodput_tok_s", "mean_running"):
        if k in m:
            m[k] *= g
    conc = load.concurrency if load.scenario == "concurrency" else round(m["mean_running"])
    layout = {"tp": d.decode_tp, "pp": 1, "ep": 1, "dp": 1, "replicas": d.decode_workers, "disagg": d.to_dict()}
    cfg = _config(layout, d.gpus, conc, load, m, dec_w)
    cfg.kv_transfer_ms = transfer_s(Request(0, 0.0, setup.isl, 1)) * 1e3
    cfg.prefill_ms = Spread.of(spread([q[0] for q in out.queue_s or ()], 1e3))
    cfg.kv_wait_ms = Spread.of(spread([q[1] for q in out.queue_s or ()], 1e3))
    return cfg
