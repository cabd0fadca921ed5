"""One bench-server run end to end: config -> load generator -> records -> summary (+ prediction).

Safety: one ``httpx.AsyncClient`` that talks only to the URL given: ``trust_env=False`` (no proxy
or netrc from the environment), no redirects followed, at most ``max(concurrency)`` connections.
The API key goes in the ``Authorization`` header only; the run line records where it came from.
Ctrl-C: the first stops new requests, cancels those in flight (recorded as ``cancelled``) and writes
a partial summary; a second one ends the process at once (the JSONL is already on disk).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import __version__
from ..errors import UserError
from ..guard.console import safe_console
from ..guard.escape import line
from ..guard.redact import PLAIN, Redactor
from .apis import redact_url
from .client import CANCELLED
from .compare import compare_phases
from .engine_info import server_info
from .guard import MAX_CONSECUTIVE_FAILURES, RecordGuard, run_guarded, sweep_saturated
from .interrupt import CtrlC
from .loadgen import LoadGenerator
from .phases import PhaseClock, phase_cpu
from .ray_driver import RayLoad
from .record import Recorder, write_csv, write_summary
from .report_html import write_report
from .sending import auth_headers, build_prompts, http_client, make_plan, make_send
from .summary import summarize
from .tokens import load_counter
from .workers import run_workers
from .workload import Dist, PromptSource

HTTP_ERROR_KINDS = ("http_4xx", "http_429", "http_5xx", "http_other")
SPREAD_KEYS = ("workers", "ray")  # where the load came from (--workers, --ray): in the end line and summary
CPU_SATURATED = 0.9  # the client's CPU time / wall time in a phase at which it may itself be the bottleneck


@dataclass
class BenchConfig:
    url: str
    api: str
    model: str
    concurrency: list[int]
    requests: int | None
    duration_s: float | None
    rate_rps: list[float] | float | None
    warmup: int
    prompt_tokens: Dist
    max_tokens: Dist
    temperature: float | None = 0.0
    seed: int = 0
    ignore_eos: bool = False
    stream_usage: bool = True
    timeouts: tuple = (10.0, 120.0, 60.0, 900.0)  # connect, first token, idle, whole request (s)
    api_key: str | None = None
    api_key_source: str | None = None
    out_dir: str = "bench-server"
    hardware: str | None = None
    predict_model: str | None = None
    quant: str | None = None
    engine: str | None = None
    tokenizer: str | None = None  # tokenizer.json, GGUF or HF folder: exact prompts, local token counts
    progress: bool = True
    max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES
    arrivals: str = "poisson"
    throughput: bool = False
    max_in_flight: int | None = None
    sweep: dict | None = None  # {"tolerance": 0.05}
    slo: dict | None = None  # {"ttft_s", "tpot_s", "e2e_s", "percentile"}
    window: dict | None = None  # {"warmup_s", "cooldown_s", "cooldown"}
    max_error_rate: float | None = None  # abort (exit 3) past this share of failures (after MIN_FOR_ERROR_RATE)
    max_run_s: float | None = None  # end the run normally after this long
    max_run_requests: int | None = None  # end the run normally after this many requests
    prompts_file: str | None = None
    prompt_column: str = "prompt"
    shared_prefix: int | None = None
    report: bool = True
    workers: int = 1  # processes generating the load (the parent records): --workers
    ray: str | None = None  # Ray head address ("auto": start or join one here); None: no Ray
    ray_actors: int | None = None  # Ray actors sending the load (None: one per node)
    notes: list = field(default_factory=list)

    @property
    def rates(self) -> list[float]:
        r = self.rate_rps
        return [] if not r else [float(r)] if isinstance(r, (int, float)) else list(r)

    def run_info(self) -> dict:
        return {"tokspeed_version": __version__, "url": redact_url(self.url), "api": self.api, "model": self.model,
                "concurrency": self.concurrency, "requests": self.requests, "duration_s": self.duration_s,
                "rate_rps": self.rates or None, "arrivals": self.arrivals if self.rates else None,
                "throughput_phase": self.throughput, "max_in_flight": self.max_in_flight,
                "warmup": self.warmup, "prompt_tokens": str(self.prompt_tokens),
                "max_tokens": str(self.max_tokens), "temperature": self.temperature, "seed": self.seed,
                "ignore_eos": self.ignore_eos, "stream_usage": self.stream_usage,
                "timeouts_s": dict(zip(("connect", "first_token", "idle", "request"), self.timeouts)),
                "api_key": f"from {self.api_key_source}" if self.api_key_source else "none",
                "hardware": self.hardware, "predict_model": self.predict_model, "quant": self.quant,
                "engine": self.engine, "tokenizer": self.tokenizer,
                "max_consecutive_failures": self.max_consecutive_failures, "max_error_rate": self.max_error_rate,
                "max_run_s": self.max_run_s, "max_run_requests": self.max_run_requests,
                "sweep": self.sweep, "slo": self.slo, "window": self.window,
                "prompts_file": self.prompts_file, "shared_prefix_tokens": self.shared_prefix, "workers": self.workers,
                **({"ray": self.ray, "ray_actors": self.ray_actors} if self.ray else {}), "notes": self.notes}


def run_bench(cfg: BenchConfig) -> tuple[dict, bool]:
    """Run the benchmark; returns (summary, interrupted). The summary is also written to out_dir.
    Ctrl-C is handled from before the first file is written until the summary is on disk."""
    with CtrlC() as ctrl_c:
        return _run(cfg, ctrl_c)


def _run(cfg: BenchConfig, ctrl_c: CtrlC) -> tuple[dict, bool]:
    out = Path(cfg.out_dir)
    counter = load_counter(cfg.tokenizer) if cfg.tokenizer else None  # fail before writing anything
    prompts = build_prompts(cfg, counter)
    Redactor.for_run(cfg.url, cfg.api_key)  # remembered by every writer: files, the console, error lines
    ray_load = None
    if cfg.ray:  # connect, place the actors, measure their clocks: before any file is written

        ray_load = RayLoad.start(cfg)
    try:
        recorder = Recorder(out, cfg.run_info())
    except BaseException:
        if ray_load:
            ray_load.close()
        raise
    records: list[dict] = []
    state: dict = {"aborted": None, "phases": {}, "server": None}
    try:
        try:
            if ctrl_c.interrupted:
                pass
            elif ray_load:
                ray_load.run(recorder, records, ctrl_c, prompts, state, _Progress(cfg.progress))
            elif cfg.workers > 1:
                run_workers(cfg, recorder, records, ctrl_c, state, _Progress(cfg.progress))
            else:
                asyncio.run(_main(cfg, recorder, records, counter, ctrl_c, prompts, state))
        except asyncio.CancelledError:  # a second Ctrl-C: the run ends now
            pass
    finally:
        interrupted = ctrl_c.interrupted
        recorder.write({"type": "end", "interrupted": interrupted, "aborted": state["aborted"],
                        "requests": len(records), "phases": state["phases"], "server": state["server"],
                        **{k: state[k] for k in SPREAD_KEYS if k in state}})
        recorder.close()
        if ray_load:
            ray_load.close()
    aborted = state["aborted"]
    run_info = {"type": "run", **cfg.run_info(), "interrupted": interrupted}
    summary = summarize(run_info, records, partial=interrupted or bool(aborted), aborted=aborted,
                        phase_info=state["phases"])
    summary["server"] = state["server"]
    if "workers" in state:
        summary["workers"] = state["workers"]
        summary["partial"] = summary["partial"] or bool(state["workers"]["dead"])
    if "ray" in state:
        summary["ray"] = state["ray"]
    misses = state.get("exact_prompt_misses", prompts.exact_misses)  # --workers: counted by the workers
    if misses:
        summary["exact_prompt_misses"] = misses
    if aborted:
        sys.stderr.write(f"tokspeed: stopped early: {line(aborted)}\n")
    hint = http_error_hint(records)
    if hint:
        summary["hint"] = hint
        sys.stderr.write(f"tokspeed: {line(hint)}\n")
    for note in console_notes(summary):
        sys.stderr.write(f"tokspeed: {line(note)}\n")
    if cfg.hardware:
        attach_prediction(summary, cfg.predict_model or cfg.model, cfg.hardware, cfg.quant, cfg.engine, records)
    summary = PLAIN.obj(summary)          # the summary is also returned and printed: credential-named entries masked
    try:
        write_summary(recorder.rundir, summary)       # through the folder's descriptor, opened once
        write_outputs(recorder.rundir, summary, records, report=cfg.report)
    finally:
        recorder.rundir.close()
    return summary, interrupted


def console_notes(summary: dict) -> list[str]:
    """What a reader must know about the numbers: unverified prompt lengths, a saturated client CPU."""
    notes = []
    if summary.get("prompt_tokens_verified") == "unverified" and summary.get("ok"):
        notes.append("prompt length unverified: the server reported no prompt token count and no --tokenizer "
                     "was given; only the target length is known (give --tokenizer to count, or a server that "
                     "sends usage)")
    for ph in summary.get("phases", []):
        if (ph.get("client_cpu_share") or 0) >= CPU_SATURATED:
            who = "the busiest client process" if ph.get("workers_cpu") else "the client"
            notes.append(f"{ph['phase']}: {who} used {ph['client_cpu_share']:.0%} of a CPU core: it may be "
                         "the bottleneck (run the load from more processes, --workers N, or machines)")
    return notes


def write_outputs(out, summary: dict, records: list[dict], report: bool = True) -> None:
    """requests.csv and report.html (secrets masked by the writer, ``guard.outputs``)."""
    write_csv(out, records)
    if report:
        write_report(out, summary, records)


async def _main(cfg: BenchConfig, recorder: Recorder, records: list[dict], counter, ctrl_c: CtrlC | None,
                prompts: PromptSource, state: dict) -> None:
    plan = make_plan(cfg, prompts)
    n_conn = max(max(cfg.concurrency), plan.max_in_flight)
    progress = _Progress(cfg.progress)

    async with http_client(n_conn) as client:
        state["server"] = await server_info(client, cfg.url, cfg.api, auth_headers(cfg))
        clock = PhaseClock()

        def on_phase(label, total, duration_s):
            clock.start()
            progress.phase(label, total, duration_s)

        def after_phase(labels: dict) -> bool:
            state["phases"][labels["phase"]] = phase_cpu(clock)
            return bool(cfg.sweep) and sweep_saturated(cfg, records)

        gen = LoadGenerator(plan, None, None, on_phase, after_phase)
        gen.on_record = RecordGuard(cfg, recorder, records, progress, state, gen.halt)
        gen.send = make_send(cfg, client, counter, gen.cancel)
        await run_guarded(gen, cfg, ctrl_c, progress)


def http_error_hint(records: list[dict]) -> str | None:
    """A line for the console when every answer was an HTTP error page: probably not an LLM endpoint."""
    answered = [r for r in records if r.get("error") != CANCELLED]
    if not answered or not all(r.get("error") in HTTP_ERROR_KINDS for r in answered):
        return None
    codes: dict = {}
    for r in answered:
        codes[r.get("http_status")] = codes.get(r.get("http_status"), 0) + 1
    seen = ", ".join(f"HTTP {c} x{n}" for c, n in sorted(codes.items(), key=lambda kv: -kv[1]))
    return (f"every answer was an HTTP error page ({seen}): is this an LLM endpoint? "
            "check the URL and --api (openai-completions, openai-chat, ollama)")


def attach_prediction(summary: dict, model: str, hardware: str, quant: str | None, engine: str | None,
                      records=None) -> None:
    """Add ``prediction`` to the summary, or ``prediction_error`` saying why there is none; ``records``: the
    run's requests, whose lengths the scheduler simulation replays."""
    try:
        summary["prediction"] = compare_phases(summary, model, hardware, quant=quant, engine=engine,
                                               records=records)
    except (UserError, ImportError) as e:
        summary["prediction_error"] = str(e)
    except Exception as e:  # a bug in the prediction must not cost the run its summary
        summary["prediction_error"] = f"prediction failed ({type(e).__name__}: {e})"
    if "prediction_error" in summary:
        sys.stderr.write(f"tokspeed: no prediction: {line(summary['prediction_error'])}\n")


class _Progress:
    """rich live progress on stderr: one bar per phase, with the error count."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._p = None
        self._task = None
        self._errors = 0

    def __enter__(self):
        if self.enabled:
            self._p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TextColumn("{task.fields[errors]} failed"), TimeElapsedColumn(),
                               console=safe_console(stderr=True), transient=False)
            self._p.__enter__()
        return self

    def __exit__(self, *exc):
        if self._p is not None:
            self._p.__exit__(*exc)

    def phase(self, label: str, total: int | None, duration_s: float | None) -> None:
        if self._p is None:
            return
        desc = label if duration_s is None else f"{label} ({duration_s:g} s)"
        self._errors = 0
        self._task = self._p.add_task(desc, total=total, errors=0)

    def advance(self, rec: dict) -> None:
        if self._p is None or self._task is None:
            return
        if not rec.get("ok") and rec.get("error") != CANCELLED:
            self._errors += 1
        self._p.update(self._task, advance=1, errors=self._errors)
