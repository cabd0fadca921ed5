"""``bench-server --workers N``: the load from N worker processes, every record written by the parent.

Each worker (a ``spawn`` process) runs the same phases as a one-process run, with its share of each
level (``LoadPlan.share``): concurrency c -> c // N slots, the first c % N workers one more; the phase's
requests split over the workers that have a slot; a rate phase's arrivals at rate x its slots / all
slots (rate / N when they divide evenly), from its own seeded RNG, so arrivals are independent.
Request numbers interleave (worker w sends w, w+N, w+2N ...): distinct indices and prompts.

The parent is the only writer of requests.jsonl: records come to it over one queue and are written
(fsynced) as they arrive, so a dead worker or a Ctrl-C loses only requests in flight. Phases start
together: each worker says it is ready and waits for the parent's go (every live worker ready, no stop,
the sweep not saturated). Each worker measures its own CPU time per phase.

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
import time
import traceback

POLL_S = 0.05  # how often a worker checks the parent's stop flags, and the parent its workers
EXIT_AFTER_ENV = "TOKSPEED_BENCH_WORKER_EXIT"  # tests: "W:K" = worker W exits (code 1) after K records


def run_workers(cfg, recorder, records: list[dict], ctrl_c, state: dict, progress) -> None:
    from .bench import RecordGuard, sweep_saturated

    n = cfg.workers
    ctx = multiprocessing.get_context("spawn")
    inbox = ctx.Queue()
    hard, soft = ctx.Event(), ctx.Event()  # stop and cancel in flight / stop and let them finish
    cmds = [ctx.SimpleQueue() for _ in range(n)]
    procs = [ctx.Process(target=worker_main, args=(cfg, w, n, inbox, cmds[w], hard, soft),
                         name=f"tokspeed-worker-{w}", daemon=True) for w in range(n)]
    info = state["workers"] = {"n": n, "dead": []}
    guard = RecordGuard(cfg, recorder, records, progress, state, lambda cancel: (hard if cancel else soft).set())
    live, ready, cpu = set(range(n)), {}, {}
    phase = {"label": None, "cpu": 0.0, "wall": 0.0, "measured": False}
    errors: dict[int, str] = {}
    t0 = time.perf_counter()
    for p in procs:
        p.start()

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
            phase.update(label=label, cpu=time.process_time(), wall=time.perf_counter(), measured=label != "warm-up")
            total, duration = _total_bounds(cfg, label)
            progress.phase(label, total, duration)

    def phase_ended(label: str) -> None:
        rows = cpu.pop(label)
        wall = time.perf_counter() - phase["wall"]
        parent_cpu = time.process_time() - phase["cpu"]
        shares = [r["cpu_share"] or 0 for r in rows] + [parent_cpu / wall if wall else 0]
        state["phases"][label] = {"client_cpu_s": sum(r["cpu_s"] for r in rows) + parent_cpu,
                                  "client_cpu_share": max(shares), "parent_cpu_s": parent_cpu,
                                  "workers_cpu": sorted(rows, key=lambda r: r["worker"])}

    with progress:
        while live:
            if ctrl_c.presses >= 2:  # a second Ctrl-C: end now (the JSONL holds every record received)
                break
            if ctrl_c.presses or (cfg.max_run_s and time.perf_counter() - t0 > cfg.max_run_s):
                (hard if ctrl_c.presses else soft).set()
            try:
                msg = inbox.get(timeout=POLL_S)
            except queue_mod.Empty:
                for w in sorted(live):
                    if procs[w].exitcode is not None:  # gone without saying done: dead
                        live.discard(w)
                        ready.pop(w, None)
                        why = errors.get(w) or f"exit code {procs[w].exitcode}"
                        info["dead"].append({"worker": w, "exitcode": procs[w].exitcode, "phase": phase["label"],
                                             "error": errors.get(w)})
                        sys.stderr.write(f"tokspeed: worker {w} died during {phase['label']} ({why}); the run "
                                         "stops with what was recorded\n")
                        hard.set()
                if live and ready and set(ready) >= live:
                    release()
                continue
            kind, w = msg[0], msg[1]
            if kind == "record":
                guard(msg[2])
            elif kind == "server":
                state["server"] = msg[2]
            elif kind == "ready":
                ready[w] = msg[2]
                if set(ready) >= live:
                    release()
            elif kind == "phase":
                cpu.setdefault(msg[2], []).append(msg[3])
                if len(cpu[msg[2]]) >= len(live):
                    phase_ended(msg[2])
            elif kind == "error":
                errors[w] = msg[2]
            elif kind == "done":
                live.discard(w)
                procs[w].join()
    for p in procs:
        if p.is_alive():
            p.terminate()
        p.join()


def _total_bounds(cfg, label: str):
    from .loadgen import LoadPlan

    if label == "warm-up":
        return cfg.warmup, None
    plan = LoadPlan(concurrency=cfg.concurrency, requests=cfg.requests, duration_s=cfg.duration_s, rates=cfg.rates,
                    warmup=0, prompt_tokens=cfg.prompt_tokens, max_tokens=cfg.max_tokens, throughput=cfg.throughput,
                    max_in_flight=cfg.max_in_flight)
    labels = next((p for p in plan.phases() if p["phase"] == label), None)
    return plan.total_bounds(labels) if labels else (None, None)


def worker_main(cfg, w: int, n: int, inbox, cmd, hard, soft) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C and tells the workers
    try:
        asyncio.run(_worker(cfg, w, n, inbox, cmd, hard, soft))
    except BaseException as e:  # say why before dying: the parent reports it
        inbox.put(("error", w, f"{type(e).__name__}: {e}"))
        sys.stderr.write(traceback.format_exc())
        _flush_and_exit(inbox, 1)
    inbox.put(("done", w))
    inbox.close()
    inbox.join_thread()


def _flush_and_exit(inbox, code: int) -> None:
    inbox.close()
    inbox.join_thread()
    os._exit(code)


async def _worker(cfg, w: int, n: int, inbox, cmd, hard, soft) -> None:
    from .bench import build_prompts, http_client, make_plan, make_send, auth_headers
    from .engine_info import server_info
    from .loadgen import LoadGenerator
    from .tokens import load_counter

    counter = load_counter(cfg.tokenizer) if cfg.tokenizer else None
    plan = make_plan(cfg, build_prompts(cfg, counter), worker=w, n_workers=n)
    exit_w, _, exit_k = os.environ.get(EXIT_AFTER_ENV, "").partition(":")
    exit_after = int(exit_k) if exit_w == str(w) else None
    sent = 0
    clock: dict = {}

    def on_record(rec: dict) -> None:
        nonlocal sent
        inbox.put(("record", w, {**rec, "worker": w}))
        sent += 1
        if exit_after is not None and sent >= exit_after:
            _flush_and_exit(inbox, 1)

    def on_phase(label, total, duration_s) -> None:
        inbox.put(("ready", w, label))
        if not cmd.get():  # blocks between phases only: nothing is in flight
            gen.halt(False)
        clock["cpu"], clock["wall"] = time.process_time(), time.perf_counter()

    def after_phase(labels: dict) -> bool:
        wall, cpu = time.perf_counter() - clock["wall"], time.process_time() - clock["cpu"]
        inbox.put(("phase", w, labels["phase"], {"worker": w, "cpu_s": cpu, "cpu_share": cpu / wall if wall else None}))
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
            inbox.put(("server", w, await server_info(client, cfg.url, cfg.api, auth_headers(cfg))))
        gen = LoadGenerator(plan, None, on_record, on_phase, after_phase)
        gen.send = make_send(cfg, client, counter, gen.cancel)
        watcher = asyncio.create_task(watch_stop())
        try:
            await gen.run()
        finally:
            watcher.cancel()
