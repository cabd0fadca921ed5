"""The client's CPU over one phase of a run, in one copy for the three ways a run is driven (one process,
``--workers``, ``--ray``): ``PhaseClock`` is started when a phase starts and read when it ends; ``phase_cpu``
folds the CPU of the parent and of every worker or actor into the phase's entry of the summary
(``client_cpu_share`` is the busiest process's: a process near one core may be the bottleneck)."""

from __future__ import annotations

import time


class PhaseClock:
    """CPU and wall seconds of this process since ``start``."""

    def __init__(self):
        self.start()

    def start(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def read(self) -> tuple[float, float]:
        """(CPU s, wall s) since ``start``."""
        return time.process_time() - self.cpu, time.perf_counter() - self.wall

    def share(self) -> dict:
        """This process's CPU over the phase, as one worker's row."""
        cpu, wall = self.read()
        return {"cpu_s": cpu, "cpu_share": cpu / wall if wall else None}


def phase_cpu(parent: PhaseClock, rows: list[dict] | None = None) -> dict:
    """The summary's entry for one phase: the parent's CPU, plus each worker's row (``worker``, ``cpu_s``,
    ``cpu_share``) when the load ran in other processes."""
    cpu, wall = parent.read()
    if rows is None:
        return {"client_cpu_s": cpu, "client_cpu_share": cpu / wall if wall else None}
    shares = [r["cpu_share"] or 0 for r in rows] + [cpu / wall if wall else 0]
    return {"client_cpu_s": sum(r["cpu_s"] for r in rows) + cpu, "client_cpu_share": max(shares),
            "parent_cpu_s": cpu, "workers_cpu": sorted(rows, key=lambda r: r["worker"])}
