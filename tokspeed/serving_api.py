"""The serving simulation's one entry point, above both ``serving`` and predict's setup: a ``ServeQuery``
(what is served, on what layout, under which load and SLOs) answered by ``serve`` with the ``tokspeed serve
--json`` document; ``make_setup`` gives the simulation predict's resolution of model, device and engine
(``prediction_setup.resolve``), which the ``serving`` package never imports (tests/test_architecture.py).

The CLI (``serve``, ``explain``), the web page's /api/serve, the HTML report's serving section, ``predict
--batch max`` and bench-server's predicted overlay come through here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .engines.compat import default_engine
from .errors import UserError
from .guard.deadline import Deadline
from .prediction_setup import resolve
from .serving import batch as _batch
from .serving import overlay as _overlay
from .serving.document import search_document, serve_document
from .serving.metrics import SLO
from .serving.run import Disagg, Load, Setup, evaluate
from .serving.search import SEARCH_S
from .serving.speculative import Speculation
from .serving.worker import Parallelism


def make_setup(model, hardware, engine: str, **kw) -> Setup:
    """A serving ``Setup`` resolved by predict's resolution (``Setup``'s other fields as keywords)."""
    return Setup(model, hardware, engine, resolver=resolve, **kw)


@dataclass(frozen=True)
class ServeQuery:
    model: object
    hardware: object
    engine: str = default_engine("serve")
    quant: str | None = None
    kv_dtype: str = "f16"
    isl: int = 1024
    osl: int = 256
    length_ratio: float = 1.0
    prefix_hit: float = 0.0
    engine_version: str | None = None
    speculation: Speculation | None = None
    sched_overrides: dict = field(default_factory=dict)
    gpus: int | None = None               # GPUs in all (default: what the layout uses)
    parallel: Parallelism | None = None   # one layout (with ``disagg`` None) ...
    replicas: int | None = None
    disagg: Disagg | None = None          # ... or one disaggregated layout; neither: a search
    load: Load | None = None              # None: offline for one layout, a concurrency sweep for a search
    slo: SLO = field(default_factory=SLO)
    search_disagg: bool = True

    def setup(self) -> Setup:
        return make_setup(self.model, self.hardware, self.engine, quant=self.quant, kv_dtype=self.kv_dtype,
                          isl=self.isl, osl=self.osl, length_ratio=self.length_ratio, prefix_hit=self.prefix_hit,
                          engine_version=self.engine_version, speculation=self.speculation,
                          sched_overrides=dict(self.sched_overrides))


def serve(q: ServeQuery) -> dict:
    """The ``tokspeed serve --json`` document of ``q``: its one layout, or the search over layouts."""
    setup = q.setup()
    setup.group(1, 1)          # resolve (and refuse a bad model or device) before any layout
    if q.parallel is None and q.disagg is None:
        return search_document(setup, q.gpus or 1, q.slo, q.load, disagg=q.search_disagg)
    par, dis = q.parallel, q.disagg
    used = dis.gpus if dis else par.gpus
    replicas = 1 if dis else (q.replicas or max(1, (q.gpus or used) // used))
    gpus = q.gpus or used * replicas
    if gpus != used * replicas:
        raise UserError(f"the layout uses {used} GPUs x {replicas} replicas = {used * replicas}, but gpus is {gpus}",
                        f"use --gpus {used * replicas} or a layout that divides {gpus}")
    load = q.load or Load("offline")
    with Deadline("the simulation", SEARCH_S, "a shorter trace or fewer --requests"):
        cfg = evaluate(setup, par, replicas, load, q.slo, dis)
    if not cfg.requests:
        raise UserError(f"no request was served: {cfg.stopped or 'nothing finished'}",
                        "use shorter requests, more GPUs or a smaller `quant`")
    return serve_document(setup, gpus, load.scenario, q.slo, [cfg], [])


def max_batch(model, hardware, tokens: int, **kw) -> dict:
    """``serving.batch.max_batch`` with predict's resolution: the largest batch the engine would run."""
    return _batch.max_batch(resolve, model, hardware, tokens, **kw)


def overlay_phase(model, hardware, quant, engine, sizes, **kw) -> dict:
    """``serving.overlay.simulate_phase`` with predict's resolution: bench-server's predicted overlay."""
    return _overlay.simulate_phase(make_setup, model, hardware, quant, engine, sizes, **kw)
