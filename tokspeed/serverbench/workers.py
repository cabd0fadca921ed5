"""``bench-server --workers N``: the load from N worker processes, every record written by the parent.

Each worker (a ``spawn`` process) runs the same phases as a one-process run, with its share of each
level (``LoadPlan.share``): concurrency c -> c // N slots, the first c % N workers one more; the phase's
requests split over the workers that have a slot; a rate phase's arrivals at rate x its slots / all
slots (rate / N when they divide evenly), from its own seeded RNG, so arrivals are independent.
Request numbers interleave (worker w sends w, w+N, w+2N ...): distinct indices and prompts.

The parent is the only writer of requests.jsonl: records come to it over one pipe per worker (one
writer each: a worker killed mid-send cannot block the others, and its pipe then reads as closed)
and are written (fsynced) as they arrive, so a dead worker or a Ctrl-C loses only requests in
flight. Phases start together: each worker says it is ready and waits for the parent's go (every
live worker ready, no stop, the sweep not saturated). Each worker measures its own CPU per phase.

A worker that exits without saying it is done is dead: the console says so, the run stops (the load
is no longer what was asked) and summary.json lists it under ``workers.dead`` and is ``partial``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue as queue_mod
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import wait

from .engine_info import server_info
from .guard import RecordGuard, sweep_saturated
from .loadgen import LoadGenerator
from .phases import PhaseClock, phase_cpu
from .sending import auth_headers, build_prompts, http_client, make_plan, make_send
from .tokens import load_counter

POLL_S = 0.05  # how often a worker checks the parent's stop flags, and the parent its workers
EXIT_AFTER_ENV = "TOKSPEED_BENCH_WORKER_EXIT"  # tests: "W:K" = worker W exits (code 1) after K records


def run_workers(cfg, recorder, records: list[dict], ctrl_c, state: dict, progress) -> None:
    n = cfg.workers
    ctx = multiprocessing.get_context("spawn")
    t_run = time.perf_counter()  # t=0 of every worker's start_s / end_s
    pipes = [ctx.Pipe(duplex=False) for _ in range(n)]  # (parent's reader, worker's writer)
    hard, soft = ctx.Event(), ctx.Event()  # stop and cancel in flight / stop and let them finish
    cmds = [ctx.SimpleQueue() for _ in range(n)]
    procs = [ctx.Process(target=worker_main, args=(cfg, w, n, pipes[w][1], cmds[w], hard, soft, t_run),
                         name=f"tokspeed-worker-{w}", daemon=True) for w in range(n)]
    info = state["workers"] = {"n": n, "dead": []}
    guard = RecordGuard(cfg, recorder, records, progress, state, lambda cancel: (hard if cancel else soft).set())
    live, ready, cpu = set(range(n)), {}, {}
    phase = {"label": None, "clock": PhaseClock(), "measured": False}
    errors: dict[int, str] = {}
    t0 = None  # the run's clock (--max-duration) starts with the first phase, after the workers start
    for p in procs:
        p.start()
    for _, writer in pipes:
        writer.close()  # the worker holds the only writer: its death reads as end of file
    readers = {pipes[w][0]: w for w in range(n)}

    def release() -> None:
        """Every live worker is ready for the next phase: say go (or stop) to all of them."""
        go = not (hard.is_set() or soft.is_set())
        if go and cfg.sweep and phase["measured"] and sweep_saturated(cfg, records):
            go = False
        label = next(iter(ready.values()))
        for w in live:
            cmds[w].put(go)
        ready.clear()
        if go:
            nonlocal t0
            t0 = t0 or time.perf_counter()
            phase.update(label=label, measured=label != "warm-up")
            phase["clock"].start()
            total, duration = _total_bounds(cfg, label)
            progress.phase(label, total, duration)

    def dead(w: int) -> None:
        live.discard(w)
        ready.pop(w, None)
        procs[w].join(1)
        why = errors.get(w) or f"exit code {procs[w].exitcode}"
        info["dead"].append({"worker": w, "exitcode": procs[w].exitcode, "phase": phase["label"],
                             "error": errors.get(w)})
        when = f"during {phase['label']}" if phase["label"] else "before the first phase"
        sys.stderr.write(f"tokspeed: worker {w} died {when} ({why}); the run stops with what was recorded\n")
        hard.set()
        for label in [lb for lb, rows in cpu.items() if len(rows) >= len(live)]:
            phase_ended(label)  # the phase the dead worker had not finished: the others' CPU

    def handle(w: int, msg: tuple) -> None:
        kind = msg[0]
        if kind == "record":
            guard(msg[1])
        elif kind == "server":
            state["server"] = msg[1]
        elif kind == "ready":
            ready[w] = msg[1]
        elif kind == "phase":
            cpu.setdefault(msg[1], []).append(msg[2])
            if len(cpu[msg[1]]) >= len(live):
                phase_ended(msg[1])
        elif kind == "error":
            errors[w] = msg[1]
        elif kind == "done":
            live.discard(w)
            state["exact_prompt_misses"] = state.get("exact_prompt_misses", 0) + msg[1]

    def phase_ended(label: str) -> None:
        state["phases"][label] = phase_cpu(phase["clock"], cpu.pop(label))

    with progress:
        while live:
            if ctrl_c.presses >= 2:  # a second Ctrl-C: end now (the JSONL holds every record received)
                break
            if ctrl_c.presses or (cfg.max_run_s and t0 and time.perf_counter() - t0 > cfg.max_run_s):
                (hard if ctrl_c.presses else soft).set()
            for conn in wait(list(readers), timeout=POLL_S):
                w = readers[conn]
                try:
                    handle(w, conn.recv())
                except (EOFError, OSError):  # the worker's end is closed: it finished, or died
                    del readers[conn]
                    conn.close()
                    if w in live:
                        dead(w)
            if live and ready and set(ready) >= live:
                release()
    for p in procs:
        if p.is_alive():
            p.terminate()
        p.join()


def _total_bounds(cfg, label: str):
    """(requests, duration_s) of a whole phase, for the progress bar."""
    if label == "warm-up":
        return cfg.warmup, None
    plan = make_plan(cfg, None)
    labels = next((p for p in plan.phases() if p["phase"] == label), None)
    return plan.total_bounds(labels) if labels else (None, None)


class Sender:
    """A worker's messages to the parent, sent from a thread so the event loop never waits on the pipe."""

    def __init__(self, conn):
        self.conn, self.q = conn, queue_mod.SimpleQueue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def put(self, msg: tuple) -> None:
        self.q.put(msg)

    def _run(self) -> None:
        for msg in iter(self.q.get, None):
            self.conn.send(msg)

    def close(self) -> None:
        """Send everything put so far, then close the pipe."""
        self.q.put(None)
        self.thread.join()
        self.conn.close()


def worker_main(cfg, w: int, n: int, conn, cmd, hard, soft, t_run: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C and tells the workers
    out = Sender(conn)
    try:
        misses = asyncio.run(_worker(cfg, w, n, out, cmd, hard, soft, t_run))
    except BaseException as e:  # say why before dying: the parent reports it
        out.put(("error", f"{type(e).__name__}: {e}"))
        sys.stderr.write(traceback.format_exc())
        _flush_and_exit(out, 1)
    out.put(("done", misses))
    out.close()


def _flush_and_exit(out: Sender, code: int) -> None:
    out.close()
    os._exit(code)


async def _worker(cfg, w: int, n: int, out, cmd, hard, soft, t_run: float) -> int:
    """Run this worker's share of every phase; returns its prompts' exact-length misses."""
    counter = load_counter(cfg.tokenizer) if cfg.tokenizer else None
    plan = make_plan(cfg, build_prompts(cfg, counter), worker=w, n_workers=n)
    exit_w, _, exit_k = os.environ.get(EXIT_AFTER_ENV, "").partition(":")
    exit_after = int(exit_k) if exit_w == str(w) else None
    sent = 0
    clock = PhaseClock()

    def on_record(rec: dict) -> None:
        nonlocal sent
        out.put(("record", {**rec, "worker": w}))
        sent += 1
        if exit_after is not None and sent >= exit_after:
            _flush_and_exit(out, 1)

    def on_phase(label, total, duration_s) -> None:
        out.put(("ready", label))
        if not cmd.get():  # blocks between phases only: nothing is in flight
            gen.halt(False)
        clock.start()

    def after_phase(labels: dict) -> bool:
        out.put(("phase", labels["phase"], {"worker": w, **clock.share()}))
        return False  # the parent decides at the next start

    async def watch_stop() -> None:
        while True:
            if hard.is_set():
                gen.halt()
            elif soft.is_set():
                gen.halt(False)
            await asyncio.sleep(POLL_S)

    n_conn = max(1, plan.share(max(max(cfg.concurrency), plan.max_in_flight)))
    async with http_client(n_conn) as client:
        if w == 0:
            out.put(("server", await server_info(client, cfg.url, cfg.api, auth_headers(cfg))))
        gen = LoadGenerator(plan, None, on_record, on_phase, after_phase, t_run=t_run)
        gen.send = make_send(cfg, client, counter, gen.cancel)
        watcher = asyncio.create_task(watch_stop())
        try:
            await gen.run()
        finally:
            watcher.cancel()
    return plan.prompts.exact_misses
