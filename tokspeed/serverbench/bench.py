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

from .. import __version__
from .apis import redact_url, request_body
from .interrupt import CtrlC
from .client import CANCELLED, RequestSpec, Timeouts, measure
from .loadgen import Job, LoadGenerator, LoadPlan
from .record import Recorder, write_summary
from .summary import summarize
from .workload import Dist

# Stop when the server has plainly gone away or broken: this many failures in a row that are connect
# errors or HTTP 5xx, whatever came before (policy: enough to ride out a server that is still starting
# or a short hiccup, few enough not to hammer a dead one). --max-consecutive-failures changes it.
MAX_CONSECUTIVE_FAILURES = 20
GIVE_UP_KINDS = ("connect", "http_5xx")
HTTP_ERROR_KINDS = ("http_4xx", "http_429", "http_5xx", "http_other")


@dataclass
class BenchConfig:
    url: str
    api: str
    model: str
    concurrency: list[int]
    requests: int | None
    duration_s: float | None
    rate_rps: float | None
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
    tokenizer: str | None = None  # tokenizer.json path: tokens per chunk when the server does not say
    progress: bool = True
    max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES
    notes: list = field(default_factory=list)

    def run_info(self) -> dict:
        return {"tokspeed_version": __version__, "url": redact_url(self.url), "api": self.api, "model": self.model,
                "concurrency": self.concurrency, "requests": self.requests, "duration_s": self.duration_s,
                "rate_rps": self.rate_rps, "warmup": self.warmup, "prompt_tokens": str(self.prompt_tokens),
                "max_tokens": str(self.max_tokens), "temperature": self.temperature, "seed": self.seed,
                "ignore_eos": self.ignore_eos, "stream_usage": self.stream_usage,
                "timeouts_s": dict(zip(("connect", "first_token", "idle", "request"), self.timeouts)),
                "api_key": f"from {self.api_key_source}" if self.api_key_source else "none",
                "hardware": self.hardware, "predict_model": self.predict_model, "quant": self.quant,
                "engine": self.engine, "tokenizer": self.tokenizer,
                "max_consecutive_failures": self.max_consecutive_failures, "notes": self.notes}


def run_bench(cfg: BenchConfig) -> tuple[dict, bool]:
    """Run the benchmark; returns (summary, interrupted). The summary is also written to out_dir.
    Ctrl-C is handled from before the first file is written until the summary is on disk."""
    with CtrlC() as ctrl_c:
        return _run(cfg, ctrl_c)


def _run(cfg: BenchConfig, ctrl_c: CtrlC) -> tuple[dict, bool]:
    out = Path(cfg.out_dir)
    count_tokens = load_token_counter(cfg.tokenizer) if cfg.tokenizer else None  # fail before writing anything
    recorder = Recorder(out, cfg.run_info())
    records: list[dict] = []
    aborted = None
    try:
        try:
            if not ctrl_c.interrupted:
                aborted = asyncio.run(_main(cfg, recorder, records, count_tokens, ctrl_c))
        except asyncio.CancelledError:  # a second Ctrl-C: the run ends now
            pass
    finally:
        interrupted = ctrl_c.interrupted
        recorder.write({"type": "end", "interrupted": interrupted, "aborted": aborted, "requests": len(records)})
        recorder.close()
    run_info = {"type": "run", **cfg.run_info(), "interrupted": interrupted}
    summary = summarize(run_info, records, partial=interrupted or bool(aborted), aborted=aborted)
    if aborted:
        sys.stderr.write(f"tokspeed: stopped early: {aborted}\n")
    hint = http_error_hint(records)
    if hint:
        summary["hint"] = hint
        sys.stderr.write(f"tokspeed: {hint}\n")
    if cfg.hardware:
        attach_prediction(summary, cfg.predict_model or cfg.model, cfg.hardware, cfg.quant, cfg.engine)
    write_summary(out, summary)
    return summary, interrupted


async def _main(cfg: BenchConfig, recorder: Recorder, records: list[dict], count_tokens=None,
                ctrl_c: CtrlC | None = None):
    """Returns the reason the run was aborted, or None."""
    import httpx

    plan = LoadPlan(concurrency=cfg.concurrency, requests=cfg.requests, duration_s=cfg.duration_s,
                    rate_rps=cfg.rate_rps, warmup=cfg.warmup, prompt_tokens=cfg.prompt_tokens,
                    max_tokens=cfg.max_tokens, seed=cfg.seed)
    timeouts = Timeouts(*cfg.timeouts)
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    n_conn = max(cfg.concurrency)
    progress = _Progress(cfg.progress)

    async with httpx.AsyncClient(trust_env=False, follow_redirects=False,
                                 limits=httpx.Limits(max_connections=n_conn, max_keepalive_connections=n_conn)) as client:

        async def send(job: Job) -> dict:
            body = request_body(cfg.api, cfg.model, job.prompt, job.max_tokens, temperature=cfg.temperature,
                                seed=cfg.seed, ignore_eos=cfg.ignore_eos, stream_usage=cfg.stream_usage)
            return await measure(client, RequestSpec(job.index, cfg.url, cfg.api, body, job.labels), timeouts,
                                 headers, count_tokens=count_tokens, secret=cfg.api_key, stop=gen.stop)

        streak = {"n": 0, "kinds": {}}
        aborted = []

        def on_record(rec: dict) -> None:
            rec = recorder.write(rec)
            records.append(rec)
            progress.advance(rec)
            kind = rec.get("error")
            if kind == CANCELLED:
                return
            if kind in GIVE_UP_KINDS:
                streak["n"] += 1
                streak["kinds"][kind] = streak["kinds"].get(kind, 0) + 1
            else:
                streak["n"], streak["kinds"] = 0, {}
            if streak["n"] >= cfg.max_consecutive_failures and not aborted:
                kinds = ", ".join(f"{k} {v}" for k, v in sorted(streak["kinds"].items()))
                aborted.append(f"{streak['n']} failures in a row ({kinds}): is the server at "
                               f"{redact_url(cfg.url)} running? (--max-consecutive-failures)")
                gen.stop.set()

        gen = LoadGenerator(plan, send, on_record, progress.phase)
        if ctrl_c is not None:
            ctrl_c.attach(asyncio.get_running_loop(), gen.stop.set, asyncio.current_task().cancel)
        try:
            with progress:
                await gen.run()
        finally:
            if ctrl_c is not None:
                ctrl_c.detach()
    return aborted[0] if aborted else None


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


def load_token_counter(path: str):
    """``text -> number of tokens`` from a Hugging Face tokenizer.json (no special tokens added)."""
    from ..errors import UserError

    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UserError("--tokenizer needs the tokenizers package", "pip install 'tokspeed[files]'") from None
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:
        raise UserError(f"cannot read tokenizer {path}: {e}") from None
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def attach_prediction(summary: dict, model: str, hardware: str, quant: str | None, engine: str | None) -> None:
    """Add ``prediction`` to the summary, or ``prediction_error`` saying why there is none."""
    from ..errors import UserError
    from .compare import compare_phases

    try:
        summary["prediction"] = compare_phases(summary, model, hardware, quant=quant, engine=engine)
    except (UserError, ImportError) as e:
        summary["prediction_error"] = str(e)
        sys.stderr.write(f"tokspeed: no prediction: {e}\n")


class _Progress:
    """rich live progress on stderr: one bar per phase, with the error count."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._p = None
        self._task = None
        self._errors = 0

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TextColumn("{task.fields[errors]} failed"), TimeElapsedColumn(),
                               console=Console(stderr=True), transient=False)
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
