"""``bench-server --ray``: the load actor. One per Ray node by default; it sends the jobs the driver
hands it with the same asyncio client as one process or ``--workers`` (``sending.make_send`` ->
``client.measure``), so every timing inside a request (TTFT, gaps, e2e) is taken on this actor's node.

The actor plans nothing and writes nothing: the driver (``ray_driver``) owns the clock, the arrivals
and the files. This module imports no Ray; the driver wraps ``LoadActor`` with ``ray.remote``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
import time

from .client import CANCELLED
from .engine_info import server_info
from .sending import auth_headers, http_client, make_send
from .tokens import load_counter


class LoadActor:
    """Sends jobs to the server, many at once (an async Ray actor: each ``send`` is one coroutine)."""

    def __init__(self, cfg, actor: int, n_conn: int, exit_after: int | None = None):
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver owns Ctrl-C and tells the actors
        self.cfg, self.actor, self.n_conn = cfg, actor, n_conn
        self.counter = load_counter(cfg.tokenizer) if cfg.tokenizer else None
        self.exit_after = exit_after  # tests: this actor's process exits when handed its (k+1)-th request
        self.handed = 0
        self.tasks: set[asyncio.Task] = set()
        self._client = self._send = self._cancel = None

    def _ready(self) -> None:
        """The HTTP client and the send coroutine, made inside the actor's event loop."""
        if self._client is None:
            self._cancel = asyncio.Event()
            self._client = http_client(self.n_conn)
            self._send = make_send(self.cfg, self._client, self.counter, self._cancel)

    async def where(self) -> dict:
        import ray  # lazy: optional dependency (ray, the distributed extra)

        ctx = ray.get_runtime_context()
        return {"actor_id": ctx.get_actor_id(), "host": socket.gethostname(), "pid": os.getpid()}

    async def clock(self) -> float:
        """This node's wall clock, for the driver's offset estimate."""
        return time.time()

    async def cpu(self) -> tuple[float, float]:
        """(CPU seconds of this process, monotonic seconds): the driver takes differences per phase."""
        return time.process_time(), time.perf_counter()

    async def server(self) -> dict | None:
        self._ready()
        return await server_info(self._client, self.cfg.url, self.cfg.api, auth_headers(self.cfg))

    async def send(self, job) -> dict:
        if self.exit_after is not None and self.handed >= self.exit_after:
            os._exit(1)
        self.handed += 1
        self._ready()
        if self._cancel.is_set():
            return {"type": "request", "index": job.index, **job.labels, "ok": False, "error": CANCELLED,
                    "error_detail": "stopped before it was sent"}
        task = asyncio.ensure_future(self._send(job))
        self.tasks.add(task)
        try:
            rec = await task
        except asyncio.CancelledError:  # cancelled before it ran
            rec = {"type": "request", "index": job.index, **job.labels, "ok": False, "error": CANCELLED,
                   "error_detail": "stopped before it was sent"}
        finally:
            self.tasks.discard(task)
        if job.conversation is None:
            rec.pop("_text", None)  # the answer travels back only for a live conversation's history
        return rec

    async def stop(self) -> None:
        """Cancel every request in flight (each returns its record as ``cancelled``) and start no more."""
        self._ready()
        self._cancel.set()
        for task in list(self.tasks):
            task.cancel()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
