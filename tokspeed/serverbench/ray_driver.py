"""``bench-server --ray [ADDRESS]``: the load sent from Ray actors on many machines, one clock, one writer.

The driver (this process) runs the same ``LoadGenerator`` as a one-process run, so it alone plans the
arrivals: rate lists, Poisson or constant gaps, concurrency caps, sweeps, SLO phases, warm-up,
``--max-duration``. Each request slot it opens is handed to the live actor with the fewest requests in
flight (ties: the lowest number), which sends it with the one-process client (``ray_actors``) and
returns the record. The driver writes every record (``guard.RecordGuard``): ``requests.jsonl``,
``summary.json`` and the report are written as with ``--workers``.

Clocks: ``start_s``/``end_s`` are the driver's (the slot handed out, the record back); the timings
inside a request (TTFT, gaps, e2e) are the actor's, all on its node. Each actor's wall-clock offset to
the driver is measured at start (the least round trip of ``CLOCK_SAMPLES`` calls; offset = the
actor's clock minus the midpoint of the call) and stated in summary.json; ``start_unix_s`` of a record
is put on the driver's clock with it.

Faults: an actor (or its node) that is lost is reported like a dead worker: one console line, the run
stops (the load is no longer what was asked), its requests in flight are recorded with
``error: "lost"`` and the reason, summary.json lists it under ``workers.dead`` and is ``partial``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import time

from ..errors import UserError
from ..guard.bounded import with_deadline
from .client import CANCELLED
from .guard import RecordGuard, run_guarded, sweep_saturated
from .loadgen import LoadGenerator
from .phases import PhaseClock, phase_cpu
from .ray_actors import LoadActor
from .sending import make_plan
from .workers import EXIT_AFTER_ENV

LOCAL = (None, "", "auto", "local")  # start or join a Ray instance on this machine
PROBE_S = 5.0  # TCP connect to a given head address before ray.init (which otherwise retries for minutes)
INIT_S = 60.0  # ray.init as a whole: a head that accepts the connection and never answers is given up on
ACTOR_START_S = 120.0  # every actor placed and answering (policy: a busy cluster starts workers slowly)
CALL_S = 30.0  # one call to an actor between phases (clock, CPU, server facts)
CANCEL_WAIT_S = 10.0  # after a cancel, how long an actor has to return the request's record
CLOCK_SAMPLES = 5
LOST = "lost"  # the error kind of a request whose actor or node was lost
INSTALL = "pip install 'tokspeed[distributed]'"


def import_ray():
    try:
        import ray  # lazy: optional dependency (ray, the distributed extra)
    except ImportError:
        raise UserError("bench-server on Ray needs the ray package, which is not installed", INSTALL) from None
    return ray


def check_address(address: str | None) -> None:
    """A head address must be host:port and answer a TCP connect (ray.init would retry for minutes)."""
    if address in LOCAL:
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):   # '²' is a digit to isdigit
        raise UserError(f"cannot read the Ray address {address!r}",
                        "give the head node's host:port (GCS, default port 6379), or auto")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_S).close()
    except OSError as e:
        raise UserError(f"no Ray cluster answers at {address} ({e.strerror or type(e).__name__})",
                        "start one with Ray's own CLI (ray start, as the head node), or give the head node's host:port") from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


class RayLoad:
    """Connected to Ray, with the actors placed and their clocks measured (``start``); ``run`` drives
    one bench-server run through them; ``close`` kills the actors (and stops Ray if it started it)."""

    def __init__(self, ray, cfg, owns: bool):
        self.ray, self.cfg, self.owns = ray, cfg, owns
        self.actors: list = []
        self.facts: list[dict] = []  # per actor: actor, actor_id, node, node_ip, host, pid, clock offset
        self.live: set[int] = set()
        self.in_flight: list[int] = []
        self.stopped: set[int] = set()
        self.gen = self.state = None
        self.label = None

    @classmethod
    def start(cls, cfg) -> "RayLoad":
        check_address(cfg.ray)
        ray = import_ray()
        owns = not ray.is_initialized()
        if owns:
            try:
                with_deadline(lambda: ray.init(address=None if cfg.ray in LOCAL else cfg.ray,
                                               logging_level=logging.ERROR, log_to_driver=False),
                              INIT_S, f"Ray at {cfg.ray}")
            except UserError:
                raise
            except (Exception, SystemExit) as e:  # Ray exits the process when it cannot reach a head
                raise UserError(f"cannot connect to Ray at {cfg.ray}: {_first_line(e)}") from None
        load = cls(ray, cfg, owns)
        try:
            load._place()
        except BaseException:
            load.close()
            raise
        return load

    def _place(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy: optional dependency (ray, the distributed extra)

        ray, cfg = self.ray, self.cfg
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        n = cfg.ray_actors or len(nodes)
        slots = max(max(cfg.concurrency), cfg.max_in_flight or 0)
        n_conn = max(1, -(-slots // n))  # least-loaded hand-out: at most ceil(slots / n) per actor
        exit_w, _, exit_k = os.environ.get(EXIT_AFTER_ENV, "").partition(":")
        remote = ray.remote(num_cpus=0, max_restarts=0)(LoadActor)
        for a in range(n):
            node = nodes[a % len(nodes)]  # spread: actor a on node a mod nodes
            where = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            exit_after = int(exit_k) if exit_w == str(a) else None
            self.actors.append(remote.options(scheduling_strategy=where).remote(cfg, a, n_conn, exit_after))
            self.facts.append({"actor": a, "node": node["NodeID"][:12], "node_id": node["NodeID"],
                               "node_ip": node.get("NodeManagerAddress")})
        try:
            placed = ray.get([x.where.remote() for x in self.actors], timeout=ACTOR_START_S)
            for fact, actor, where in zip(self.facts, self.actors, placed):
                fact.update(where, **self._clock(actor))
        except ray.exceptions.GetTimeoutError:
            raise UserError(f"the Ray actors did not start within {ACTOR_START_S:g} s",
                            "is the cluster busy, or tokspeed not installed on every node?") from None
        except ray.exceptions.RayError as e:
            raise UserError(f"a Ray actor could not start: {_first_line(e)}",
                            "install tokspeed (the same version) on every node") from None
        self.live = set(range(n))
        self.in_flight = [0] * n

    def _clock(self, actor) -> dict:
        """The actor's wall-clock offset to this process: from the call with the least round trip."""
        best = None
        for _ in range(CLOCK_SAMPLES):
            t0 = time.time()
            theirs = self.ray.get(actor.clock.remote(), timeout=CALL_S)
            t1 = time.time()
            if best is None or t1 - t0 < best[1]:
                best = (theirs - (t0 + t1) / 2, t1 - t0)
        return {"clock_offset_s": best[0], "clock_rtt_s": best[1]}

    def summary(self) -> dict:
        """summary.json's ``ray``: where the load came from and each actor's clock offset."""
        return {"address": self.cfg.ray or "auto", "nodes": len({f["node_id"] for f in self.facts}),
                "actors": self.facts}

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # already gone with its node
                pass
        if self.owns:
            self.ray.shutdown()

    def run(self, recorder, records: list[dict], ctrl_c, prompts, state: dict, progress) -> None:
        state["workers"] = {"n": len(self.actors), "dead": []}
        state["ray"] = self.summary()
        self.state = state
        asyncio.run(self._drive(recorder, records, ctrl_c, prompts, progress))

    async def _drive(self, recorder, records, ctrl_c, prompts, progress) -> None:
        cfg, state = self.cfg, self.state
        try:
            state["server"] = await asyncio.wait_for(self._wrap(self.actors[0].server.remote()), CALL_S)
        except (asyncio.TimeoutError, self.ray.exceptions.RayError):
            state["server"] = None
        clock: dict = {"parent": PhaseClock()}

        def on_phase(label, total, duration_s) -> None:
            self.label = label
            clock["actors"] = self._cpu()
            clock["parent"].start()
            progress.phase(label, total, duration_s)

        def after_phase(labels: dict) -> bool:
            self._phase_cpu(labels["phase"], clock)
            return bool(cfg.sweep) and sweep_saturated(cfg, records)

        gen = self.gen = LoadGenerator(make_plan(cfg, prompts), self._send, None, on_phase, after_phase)
        gen.on_record = RecordGuard(cfg, recorder, records, progress, state, gen.halt)
        await run_guarded(gen, cfg, ctrl_c, progress)

    def _cpu(self) -> dict:
        """(CPU s, monotonic s) of every live actor; between phases, when nothing is in flight."""
        out = {}
        for a in sorted(self.live):
            try:
                out[a] = self.ray.get(self.actors[a].cpu.remote(), timeout=CALL_S)
            except self.ray.exceptions.RayError:
                pass
        return out

    def _phase_cpu(self, label: str, clock: dict) -> None:
        end = self._cpu()
        rows = []
        for a, (cpu0, t0) in clock["actors"].items():
            if a in end:
                cpu, t = end[a][0] - cpu0, end[a][1] - t0
                rows.append({"worker": a, "cpu_s": cpu, "cpu_share": cpu / t if t else None})
        self.state["phases"][label] = phase_cpu(clock["parent"], rows)

    @staticmethod
    def _wrap(ref):
        return asyncio.wrap_future(ref.future())

    async def _send(self, job) -> dict:
        """Hand one job to the least-loaded live actor and return its record, tagged with actor and node."""
        ray = self.ray
        if not self.live:
            return self._failed(job, LOST, "no live Ray actor to send it")
        a = min(self.live, key=lambda i: (self.in_flight[i], i))
        self.in_flight[a] += 1
        fut = self._wrap(self.actors[a].send.remote(job))
        try:
            try:
                rec = await asyncio.shield(fut)
            except asyncio.CancelledError:  # the run stops: the actor cancels and returns the record
                self._stop_all()
                rec = await asyncio.wait_for(asyncio.shield(fut), CANCEL_WAIT_S)
        except asyncio.TimeoutError:
            rec = self._failed(job, CANCELLED, f"actor {a} returned no record within {CANCEL_WAIT_S:g} s of the stop")
        except ray.exceptions.RayActorError as e:
            rec = self._failed(job, LOST, self._lost(a, e))
        except ray.exceptions.RayError as e:
            rec = self._failed(job, "client_error", f"actor {a}: {_first_line(e)}")
        finally:
            self.in_flight[a] -= 1
        if rec.get("start_unix_s") is not None:
            rec["start_unix_s"] -= self.facts[a]["clock_offset_s"]
        rec.update(worker=a, actor=a, node=self.facts[a]["node"])
        return rec

    @staticmethod
    def _failed(job, kind: str, detail: str) -> dict:
        return {"type": "request", "index": job.index, **job.labels, "ok": False, "error": kind,
                "error_detail": detail}

    def _stop_all(self) -> None:
        for a in self.live - self.stopped:
            self.stopped.add(a)
            self.actors[a].stop.remote()

    def _lost(self, a: int, e: BaseException) -> str:
        """Actor ``a`` is gone: say so once, stop the run; returns the reason each lost request records."""
        fact = self.facts[a]
        reason = f"actor {a} on node {fact['node']} ({fact['node_ip']}) was lost: {_first_line(e)}"
        if a in self.live:
            self.live.discard(a)
            self.state["workers"]["dead"].append({"worker": a, "exitcode": None, "phase": self.label,
                                                  "error": reason, "actor": a, "node": fact["node"]})
            when = f"during {self.label}" if self.label else "before the first phase"
            sys.stderr.write(f"tokspeed: Ray actor {a} on node {fact['node']} was lost {when}; "
                             "the run stops with what was recorded\n")
            # after this send returns: a halt now would cancel the running task and lose its record
            asyncio.get_running_loop().call_soon(self.gen.halt, True)
        return reason
