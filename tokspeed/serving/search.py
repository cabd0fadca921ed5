"""Search the serving layouts of a GPU count: which layout and load give the most output tok/s per GPU
within the SLOs, and the frontier of tok/s per GPU against tok/s per user.

Layouts (``layouts``): ``tp x pp`` workers replicated over the GPUs (TP a divisor of the attention heads);
for a MoE model also experts over ``ep`` GPUs with attention TP (``dp = 1``) or attention data parallel
groups (``tp x dp = ep``); and disaggregated prefill/decode pools (``P`` workers of ``tp_p`` GPUs + ``D``
workers of ``tp_d`` GPUs filling the GPU count). Loads: the concurrency levels 1, 2, 4, ... until the
throughput stops rising by 2 % or the KV pool is full (a disaggregated layout also once two levels miss the
SLOs: its prefill queue only grows), plus the level halfway where the SLOs start to fail (or the one load
asked for); levels are per engine instance (replica or decode worker), so a layout of 8 replicas
is tried at 8, 16, 32 ... in all.
Ranking: configurations within the SLOs first, then layouts a serving measurement is behind before those
none is (pipeline parallelism: ``unmodelled.UNMEASURED``), then output tok/s per GPU.
"""

from __future__ import annotations

from ..errors import UserError
from ..guard.deadline import Deadline
from .metrics import SLO
from .result import FrontierPoint, ServingConfig
from .run import Disagg, Load, Setup, evaluate
from .worker import Parallelism

MAX_CONCURRENCY = 4096
# the layouts grow with the GPU count (69 at 16 GPUs, 22,637 at 4,096) and each is simulated at several
# concurrency levels (~25 ms a layout): a search stops at a rack of 64 (~300 layouts, tens of seconds);
# one stated layout (`--parallel`, `--disagg`) is a single simulation and has no such cap
MAX_SEARCH_GPUS = 64
SEARCH_CLOSED_LOOP = 4        # requests per client in the search (the single-layout mode uses more)
SEARCH_S = 60.0               # the whole search (guard.deadline): a 64-GPU search takes tens of seconds


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layouts(spec, gpus: int, disagg: bool = True) -> list[tuple]:
    """(Parallelism, replicas, Disagg | None) for ``gpus`` GPUs."""
    ok_tp = [t for t in divisors(gpus) if spec.n_heads % t == 0]
    out = []
    for tp in ok_tp:
        for pp in (1, 2, 4):
            if gpus % (tp * pp) or pp > spec.n_layers or (pp > 1 and tp * pp < 4):
                continue
            out.append((Parallelism(tp=tp, pp=pp), gpus // (tp * pp), None))
    if spec.is_moe:
        for w in divisors(gpus):
            if w < 2:
                continue
            for tp in (t for t in ok_tp if w % t == 0):
                out.append((Parallelism(tp=tp, ep=w, dp=w // tp), gpus // w, None))
    if disagg and gpus >= 2:
        for tp_p in ok_tp:
            for tp_d in ok_tp:
                for d in range(1, gpus // tp_d + 1):
                    rest = gpus - d * tp_d
                    if rest >= tp_p and rest % tp_p == 0:
                        out.append((None, 1, Disagg(rest // tp_p, tp_p, d, tp_d)))
    return out


def _fits(setup: Setup, par, d) -> bool:
    """Whether the weights leave room for a KV pool on every worker of the layout."""
    pars = [par] if d is None else [Parallelism(tp=d.prefill_tp), Parallelism(tp=d.decode_tp)]
    try:
        return all(setup.worker(p)[0].kv_tokens >= setup.isl + setup.osl for p in pars)
    except UserError:
        return False


def search(setup: Setup, gpus: int, load: Load | None, slo: SLO | None,
           disagg: bool = True) -> tuple[list[ServingConfig], list[FrontierPoint]]:
    """(configs best first, frontier points). ``load`` None sweeps concurrency levels."""
    if gpus > MAX_SEARCH_GPUS:
        raise UserError(f"a layout search covers at most {MAX_SEARCH_GPUS} GPUs, got gpus={gpus}",
                        "state one layout (parallel, disagg) for a larger cluster", field="gpus")
    spec = setup.group(1, 1).spec
    rows = []
    todo = layouts(spec, gpus, disagg)
    clock = Deadline("the serving search", SEARCH_S, "state one layout (--parallel or --disagg), fewer GPUs or a "
                     "shorter trace", unit="layouts")
    with clock:                                   # simulations inside tick() it
        for i, (par, replicas, d) in enumerate(todo):
            clock.check(i, len(todo))
            if not _fits(setup, par, d):
                continue
            if load is not None:
                rows.append(evaluate(setup, par, replicas, load, slo, d))
                continue
            rows += _sweep(setup, par, replicas, d, slo, clock.check)
    rows = [r for r in rows if r.output_tok_s > 0]
    rows.sort(key=lambda r: (r.meets_slo is False, not r.measured, -r.output_tok_s_per_gpu))
    return rows, frontier(rows)


def _sweep(setup: Setup, par, replicas: int, d, slo: SLO | None, check=lambda: None) -> list[dict]:
    """Concurrency 1, 2, 4 ... per engine instance until throughput stops rising (or the pool preempts);
    where the SLOs start to fail between two levels, also the level halfway (x 1.5) between them."""
    engines = d.decode_workers if d is not None else replicas       # the load splits over these

    def at(c):
        return evaluate(setup, par, replicas, Load("concurrency", concurrency=c * engines,
                                                   n_requests=max(SEARCH_CLOSED_LOOP * c, 32)), slo, d)

    out, best, c = [], 0.0, 1
    while c <= MAX_CONCURRENCY:
        check()
        cfg = at(c)
        out.append(cfg)
        if len(out) > 1 and out[-2].meets_slo and cfg.meets_slo is False and c >= 4:
            out.append(at(c * 3 // 4))
        if cfg.output_tok_s < best * 1.02 or cfg.preemptions:
            break
        if d is not None and len(out) > 1 and out[-1].meets_slo is False and out[-2].meets_slo is False:
            break         # a disaggregated pool past its SLOs twice: its queues only grow from here
        best = max(best, cfg.output_tok_s)
        c *= 2
    return out


def frontier(rows: list) -> list[dict]:
    """The points no other point beats on both tok/s per GPU and tok/s per user."""
    pts = sorted({(r.output_tok_s_per_gpu, r.tok_s_per_user) for r in rows if r.tok_s_per_user},
                 key=lambda p: (-p[0], -p[1]))
    out, best_user = [], -1.0
    for g, u in pts:
        if u > best_user:
            out.append(FrontierPoint(g, u))
            best_user = u
    return out


def best_per_layout(rows: list) -> list:
    """The first (best) row of each layout, in order."""
    seen, out = set(), []
    for r in rows:
        key = repr(r.layout)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
