"""Evaluate one serving configuration: a layout (workers x replicas, or disaggregated prefill/decode),
a load (offline, fixed concurrency, request rate, recorded trace), and the metrics of ``metrics``.

Replicas (data parallelism across engine instances) share the load evenly: one replica is simulated at
``1/replicas`` of the concurrency, rate or requests, and its throughput multiplied.

Disaggregated prefill/decode (``Disagg``): ``prefill_workers`` engines of ``prefill_tp`` GPUs only prefill,
``decode_workers`` engines of ``decode_tp`` GPUs only decode; a prompt's KV cache moves between them over
the device link (``kv bytes / link rate``; across servers the network link). Simulated in two stages: the
decode pool (prompts arrive cached) sets the throughput under the load; the prefill pool's capacity (an
offline run of prompts alone) bounds it, and a run at the resulting request rate (at most 95 % of that
capacity) sets TTFT. A rate beyond the prefill pool's capacity gives no steady state (0 tok/s). E2E = TTFT + KV transfer +
the decode pool's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import UserError
from ..memory import kv_bytes
from ..scale.interconnect import device_link
from .attention_dp import instance_scheduler
from .fitted import fitted_for
from .metrics import SLO, summarize
from .requests import Arrivals, Request, lengths, make_requests
from .schedulers import Scheduler, scheduler_for
from .simulate import simulate
from .speculative import Speculation, attach
from .unmodelled import WARNINGS, not_modelled
from .worker import Parallelism, build_worker, resolve_group

DEFAULT_REQUESTS = {"offline": 1000, "rate": 500}
MAX_DEFAULT_REQUESTS = 20_000   # a closed loop's default requests: 8 per client up to this
PREFILL_PROBE = 64           # requests of the prefill pool's runs (per worker)
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
    _groups: dict = field(default_factory=dict, repr=False)
    _workers: dict = field(default_factory=dict, repr=False)

    def group(self, tp: int, pp: int):
        key = (tp, pp)
        if key not in self._groups:
            self._groups[key] = _GROUPS.get((self._key(), key)) or resolve_group(self.model, self.hardware, self.engine, self.quant, self.kv_dtype,
                                              tp, pp, self.engine_version)
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
                    draft = build_worker(resolve_group(self.speculation.draft_model, self.hardware, self.engine,
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
             disagg: Disagg | None = None) -> dict:
    """One config of the ``tokspeed serve`` JSON contract (plus diagnostics)."""
    if disagg is not None:
        return _evaluate_disagg(setup, disagg, load, slo)
    out, w = run_worker(setup, par, load, replicas)
    gpus = w.gpus * replicas
    m = summarize(out, w.gpus, slo)
    m["output_tok_s"] *= replicas
    m["request_rate_rps"] *= replicas
    for k in ("goodput_rps", "goodput_tok_s"):
        if k in m:
            m[k] *= replicas
    conc = load.concurrency if load.scenario == "concurrency" else round(m["mean_running"] * replicas)
    layout = {**par.to_dict(), "replicas": replicas, "disagg": None}
    cfg = _config(layout, gpus, conc, load, m, w)
    flags = not_modelled(setup.engine, setup.engine_version, par)
    if flags:
        cfg["warnings"] = [WARNINGS[f] for f in flags]
    return cfg


def _config(layout, gpus, conc, load, m, w) -> dict:
    prof = w.resolved.profile
    lo = max(prof.decode_error_pct, prof.prefill_error_pct) / 100 if prof else 0.3
    band = {"low": m["output_tok_s"] * (1 - min(lo, 0.9)), "high": m["output_tok_s"] * (1 + lo)}
    out = {"layout": layout, "gpus": gpus, "concurrency": conc,
           "rate_rps": load.rate_rps if load.scenario == "rate" else None,
           "output_tok_s": m["output_tok_s"], "output_tok_s_per_gpu": m["output_tok_s"] / gpus,
           "tok_s_per_user": m["tok_s_per_user"], "ttft_ms": m["ttft_ms"], "tpot_ms": m["tpot_ms"],
           "itl_ms": m["itl_ms"], "e2e_s": m["e2e_s"], "meets_slo": m["meets_slo"], "band": band,
           "kv_pool_tokens": w.kv_tokens, "mean_running": m["mean_running"], "preemptions": m["preemptions"],
           "requests": m["requests"]}
    for k in ("goodput_rps", "goodput_tok_s", "stopped"):
        if k in m:
            out[k] = m[k]
    return out


def kv_transfer_s(setup: Setup, r, isl: int, n_gpus: int) -> float:
    """Seconds to move one prompt's KV cache from a prefill worker to a decode worker."""
    nbytes = kv_bytes(r.spec, r.kv_elem_bytes, 1, max(isl, 1))
    link = device_link(r.hw, max(n_gpus, 2))
    return nbytes / link.per_direction_bytes_s if link else 0.0


def _evaluate_disagg(setup: Setup, d: Disagg, load: Load, slo: SLO | None) -> dict:
    from .metrics import spread

    dec_par, pf_par = Parallelism(tp=d.decode_tp), Parallelism(tp=d.prefill_tp)
    dec_out, dec_w = run_worker(setup, dec_par, load, d.decode_workers, prefilled=True)
    dec = summarize(dec_out, dec_w.gpus)
    dec_tok_s = dec["output_tok_s"] * d.decode_workers
    req_rps = dec["request_rate_rps"] * d.decode_workers if load.scenario != "rate" else load.rate_rps
    one = lambda q: 1                                              # noqa: E731  prefill makes the first token
    cap_out, pf_w = run_worker(setup, pf_par, Load("offline", n_requests=PREFILL_PROBE * d.prefill_workers,
                                                   seed=load.seed), d.prefill_workers, osl_override=one)
    pf_rps = summarize(cap_out, pf_w.gpus)["request_rate_rps"] * d.prefill_workers     # the pool's capacity
    stable = pf_rps >= req_rps
    pf_load = Load("rate", rate_rps=max(min(req_rps, 0.95 * pf_rps), 1e-9), n_requests=PREFILL_PROBE,
                   poisson=load.poisson if load.scenario == "rate" else False, seed=load.seed)
    if load.scenario == "offline":
        pf_out = cap_out
    else:
        pf_out, _ = run_worker(setup, pf_par, pf_load, d.prefill_workers, osl_override=one)
    avg_osl = dec_out.output_tokens / max(len(dec_out.requests), 1)
    total = min(dec_tok_s, pf_rps * avg_osl)
    if load.scenario == "rate" and not stable:
        total = 0.0
    xfer = kv_transfer_s(setup, dec_w.resolved, setup.isl, d.gpus)
    ttft = [r[1] for r in pf_out.requests]
    e2e = [a + xfer + b for a, b in zip(sorted(ttft), sorted(r[2] for r in dec_out.requests))]
    m = dict(dec)
    m.update(output_tok_s=total, ttft_ms=spread(ttft, 1e3), e2e_s=spread(e2e))
    if slo is not None and slo.any:
        from .metrics import meets
        m["meets_slo"] = stable and meets(m, slo)
    else:
        m["meets_slo"] = None
    gpus = d.gpus
    conc = load.concurrency if load.scenario == "concurrency" else round(dec["mean_running"] * d.decode_workers)
    layout = {"tp": d.decode_tp, "pp": 1, "ep": 1, "dp": 1, "replicas": d.decode_workers, "disagg": d.to_dict()}
    cfg = _config(layout, gpus, conc, load, m, dec_w)
    cfg["kv_transfer_ms"] = xfer * 1e3
    cfg["prefill_capacity_rps"] = pf_rps
    return cfg
