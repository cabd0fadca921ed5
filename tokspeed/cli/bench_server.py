"""`tokspeed bench-server URL --model NAME`: measure a running OpenAI-compatible server or Ollama.

Writes DIR/requests.jsonl (one line per request as it finishes) and DIR/summary.json; prints a table
(or the summary as JSON with --json). `--summarize DIR` rebuilds the summary from an existing JSONL.
Exit codes: 0 all requests succeeded, 3 some failed, 2 user error, 130 interrupted (summary still written).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from ..errors import UserError
from ..guard.limits import MIN_RATE_RPS  # one request per 100 s: slower is not a load test
import json
import time
from ..extras import require
from ..guard.outputs import check_outputs
from ..hardware.catalog import get_hardware
from ..serverbench.apis import endpoint_url
from ..serverbench.bench import BenchConfig, run_bench
from ..serverbench.bench import attach_prediction
from ..serverbench.bench import write_outputs
from ..serverbench.compare_runs import compare_runs
from ..serverbench.record import REQUESTS
from ..serverbench.record import RUN_FILES
from ..serverbench.record import read_jsonl, write_summary
from ..serverbench.report import print_summary
from ..serverbench.summary import summarize
from ..serverbench.workload import parse_dist
from ..userfile import path_kind

# Safety caps (policy, not physics): a typo must not start an hours-long flood. Larger values are
# capped and the run says so on stderr.
MAX_REQUESTS = 10_000  # per phase
MAX_DURATION_S = 3_600.0  # per phase
MAX_CONCURRENCY = 256
MAX_PHASES = 16
MAX_RATE_RPS = 1_000.0
MAX_WARMUP = 100
MAX_OUTPUT_TOKENS = 32_768
MAX_PROMPT_TOKENS = 131_072
MAX_WORKERS = 64  # load processes (policy: far more than cores is only overhead)
MAX_RAY_ACTORS = 1024  # Ray actors (policy: a typo must not start thousands of processes on a cluster)
RATE_MAX_IN_FLIGHT = 64  # default cap on requests in flight in a --rate run
KEY_ENV_VARS = ("TOKSPEED_API_KEY", "OPENAI_API_KEY")
MIN_TIME_S = 1e-6  # the smallest time a flag takes (policy: below any latency a client can measure)
DEFAULT_MAX_RUN_S = 24 * 3600.0  # a run ends after this long unless --max-duration says otherwise
TIME_FLAGS = ("--duration", "--slo-e2e-s", "--warmup-s", "--cooldown-s", "--max-duration", "--connect-timeout",
              "--first-token-timeout", "--idle-timeout", "--request-timeout")
EXIT_SOME_FAILED = 3
EXIT_INTERRUPTED = 130


def add_parser(sub):
    p = sub.add_parser("bench-server", help="benchmark a running OpenAI-compatible server or Ollama",
                       description="Stream requests to ONE server (the URL given), time every token, "
                                   "record each request to DIR/requests.jsonl and summarise.")
    p.add_argument("url", nargs="?", help="server base URL, e.g. http://127.0.0.1:8000 (or .../v1)")
    p.add_argument("--model", help="model name as the server knows it")
    p.add_argument("--api", default="openai-completions",
                   choices=["openai-completions", "openai-chat", "ollama", "ollama-chat"])
    bound = p.add_mutually_exclusive_group()
    bound.add_argument("--requests", type=int, help=f"requests per phase (default max(10, 4 x concurrency); cap {MAX_REQUESTS})")
    bound.add_argument("--duration", type=float, help=f"seconds per phase (cap {MAX_DURATION_S:g})")
    p.add_argument("--concurrency", help="comma list of concurrency levels, e.g. 1,2,4,8 (default 1); "
                                          f"with --rate: the most requests in flight (default {RATE_MAX_IN_FLIGHT})")
    p.add_argument("--rate", help="comma list of arrival rates in requests/s, e.g. 0.5,1,2: one phase each")
    p.add_argument("--arrivals", default="poisson", choices=["poisson", "constant"],
                   help="rate phases: Poisson (default) or evenly spaced arrivals")
    p.add_argument("--throughput", action="store_true",
                   help="add a throughput phase: --max-in-flight requests back to back (as many as the server takes)")
    p.add_argument("--max-in-flight", type=int, help=f"requests in flight in rate/throughput phases (default {RATE_MAX_IN_FLIGHT})")
    p.add_argument("--sweep", action="store_true",
                   help="raise the load (the --concurrency or --rate list, else doubling) until output tok/s stops "
                        "rising or an SLO breaks; summary.json gets `saturation`")
    p.add_argument("--sweep-tolerance", type=float, default=5.0,
                   help="percent: a level whose output tok/s is no more than this above the level before ends the sweep (default 5)")
    slo = p.add_argument_group("SLOs and goodput")
    slo.add_argument("--slo-ttft-ms", type=float, help="time to first token limit, ms")
    slo.add_argument("--slo-tpot-ms", type=float, help="time per output token limit, ms")
    slo.add_argument("--slo-e2e-s", type=float, help="whole request limit, s")
    slo.add_argument("--slo-percentile", type=float, default=90.0, help="percentile the SLOs hold at (default 90)")
    stop = p.add_argument_group("warm-up, cool-down and stop conditions")
    stop.add_argument("--warmup-s", type=float, help="per phase: leave out requests started in its first S seconds")
    stop.add_argument("--cooldown", type=int, help="per phase: leave out its last N requests to finish")
    stop.add_argument("--cooldown-s", type=float, help="per phase: leave out requests ending in its last S seconds")
    stop.add_argument("--max-error-rate", type=float,
                      help="abort (exit 3) once more than this share (0-1) of requests failed, after 10")
    stop.add_argument("--max-duration", type=float,
                      help=f"end the whole run normally after S seconds (default {DEFAULT_MAX_RUN_S / 3600:g} h)")
    stop.add_argument("--max-requests", type=int, help="end the whole run normally after N requests")
    src = p.add_argument_group("prompts")
    src.add_argument("--prompts", help="prompt file: JSONL (prompt/text field, or chat transcripts with messages) or CSV")
    src.add_argument("--prompt-column", default="prompt", help="CSV/JSONL field holding the prompt (default prompt)")
    src.add_argument("--shared-prefix", type=int, help="every prompt starts with the same N-token system prompt")
    p.add_argument("--compare", nargs="+", metavar="DIR", help="overlay these runs (their summary.json) in one report")
    p.add_argument("--no-report", action="store_true", help="do not write report.html")
    p.add_argument("--prompt-tokens", default="128", help="target prompt length: N or LO-HI (uniform); default 128")
    p.add_argument("--max-tokens", default="128", help="output length asked: N or LO-HI (uniform); default 128")
    p.add_argument("--warmup", type=int, default=1, help="warm-up requests before measuring, excluded (default 1)")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature sent (default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed for lengths/prompts, also sent to the server")
    p.add_argument("--ignore-eos", action="store_true", help="ask the server to ignore EOS (vLLM, SGLang, llama.cpp)")
    p.add_argument("--no-stream-usage", action="store_true",
                   help="do not send stream_options.include_usage (for servers that reject it)")
    p.add_argument("--connect-timeout", type=float, default=10.0, help="seconds (default 10)")
    p.add_argument("--first-token-timeout", type=float, default=120.0, help="seconds from send (default 120)")
    p.add_argument("--idle-timeout", type=float, default=60.0, help="longest gap between chunks, seconds (default 60)")
    p.add_argument("--request-timeout", type=float, default=900.0, help="whole request, seconds (default 900)")
    p.add_argument("--max-consecutive-failures", type=int, default=20,
                   help="stop the run (aborted, exit 3) after this many connect errors / HTTP 5xx in a row (default 20)")
    p.add_argument("--api-key", help=f"bearer token; default from ${KEY_ENV_VARS[0]} or ${KEY_ENV_VARS[1]}. Never printed or saved")
    p.add_argument("--tokenizer", help="tokenizer.json, GGUF or HF folder of the served model: synthetic prompts cut to "
                                       "exactly --prompt-tokens, and counts the server did not send")
    p.add_argument("--hardware", help="hardware id/file: put the measured decode speed next to tokspeed's prediction")
    p.add_argument("--predict-model", help="catalog id or model file for the prediction (default: --model)")
    p.add_argument("--quant", help="quantization for the prediction, e.g. Q4_K_M")
    p.add_argument("--engine", help="engine for the prediction (default llama.cpp)")
    p.add_argument("-o", "--output", help="run directory (default ./bench-server-YYYYmmdd-HHMMSS)")
    p.add_argument("--summarize", metavar="DIR", help="rebuild DIR/summary.json from DIR/requests.jsonl and print it")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--quiet", action="store_true", help="no live progress")
    p.add_argument("--workers", default="1", metavar="N",
                   help="processes that generate the load (default 1); each level is split over them, this "
                        "process records. For when one client process saturates a core")
    p.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                   help="send the load from Ray actors (extra tokspeed[distributed]): no ADDRESS or auto starts or "
                        "joins a Ray instance here, host:port joins a cluster; this process plans and records")
    p.add_argument("--ray-actors", metavar="N", help="Ray actors sending the load (default one per node)")
    return p


def require_httpx() -> None:
    """bench-server needs the ``server`` extra; say so before any file is written."""
    require("server", "httpx", what="bench-server")


def run(args) -> int:
    if args.compare:
        return _foreign(_compare, args, "--compare")
    if args.summarize:
        return _foreign(_resummarize, args, "--summarize")

    cfg = _config(args, BenchConfig)
    require_httpx()
    if cfg.ray:
        require("distributed", "ray", what="bench-server --ray")
    summary, interrupted = run_bench(cfg)
    _print(summary, args)
    sys.stderr.write(f"tokspeed: wrote {cfg.out_dir}/requests.jsonl and summary.json\n")
    if interrupted:
        sys.stderr.write("tokspeed: interrupted; the summary is partial\n")
        return EXIT_INTERRUPTED
    return EXIT_SOME_FAILED if summary["failed"] or summary.get("aborted") or _dead_workers(summary) else 0


def _foreign(fn, args, flag: str) -> int:
    """Run files may come from someone else: a field of a type no run writes is one line naming the flag."""
    try:
        return fn(args)
    except (TypeError, KeyError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        if isinstance(e, UserError):
            raise
        raise UserError(f"{flag}: a run file holds a field of the wrong type or value "
                        f"({type(e).__name__}: {str(e)[:80]})", "was it written by bench-server?") from None


def _dead_workers(summary: dict) -> bool:
    return bool((summary.get("workers") or {}).get("dead"))


def _resummarize(args) -> int:
    log = read_jsonl(args.summarize)
    run_info, bad = log.run, log.unreadable
    end = log.end or {}
    summary = summarize(run_info, log.requests, partial=log.partial, skipped_lines=bad,
                        aborted=end.get("aborted"), phase_info=end.get("phases"))
    summary["server"] = end.get("server")
    if end.get("workers"):
        summary["workers"] = end["workers"]
        summary["partial"] = summary["partial"] or bool(end["workers"].get("dead"))
    if end.get("ray"):
        summary["ray"] = end["ray"]
    hw = args.hardware or run_info.get("hardware")
    if hw:
        pm = args.predict_model or run_info.get("predict_model") or run_info.get("model")
        attach_prediction(summary, pm, hw, args.quant or run_info.get("quant"), args.engine or run_info.get("engine"),
                          log.requests)

    d = args.summarize if os.path.isdir(args.summarize) else os.path.dirname(args.summarize)
    write_summary(d, summary)
    write_outputs(Path(d), summary, log.requests, report=not args.no_report)
    if bad:
        sys.stderr.write(f"tokspeed: skipped {bad} unreadable line(s)\n")
    _print(summary, args)
    return EXIT_SOME_FAILED if summary["failed"] or summary.get("aborted") or _dead_workers(summary) else 0


def _rates(text: str | None, notes: list) -> list[float]:
    if not text:
        return []
    try:
        rates = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise UserError(f"cannot read --rate {text!r}", "write a comma list of requests/s like 0.5,1,2") from None
    if not rates:
        raise UserError(f"cannot read --rate {text!r}", "write a comma list of requests/s like 0.5,1,2")
    for r in rates:
        _positive("--rate", r)
    if len(rates) > MAX_PHASES:
        notes.append(f"--rate has {len(rates)} levels; kept the first {MAX_PHASES}")
        rates = rates[:MAX_PHASES]
    return [_capped(r, MAX_RATE_RPS, "--rate", notes) for r in rates]


def _slo(args) -> dict | None:
    slo = {k: v for k, v in (("ttft_s", args.slo_ttft_ms and args.slo_ttft_ms / 1e3),
                             ("tpot_s", args.slo_tpot_ms and args.slo_tpot_ms / 1e3),
                             ("e2e_s", args.slo_e2e_s)) if v}
    return {**slo, "percentile": args.slo_percentile} if slo else None


def _window(args) -> dict | None:
    w = {k: v for k, v in (("warmup_s", args.warmup_s), ("cooldown_s", args.cooldown_s),
                           ("cooldown", args.cooldown)) if v}
    return w or None


def _compare(args) -> int:
    out = compare_runs(args.compare, args.output)
    sys.stderr.write(f"tokspeed: wrote {out}\n")
    return 0


def _positive(name: str, v) -> None:
    """A count or a length of time must be a finite number > 0 (nan and inf are refused, not run); a time
    at least MIN_TIME_S (1e-321 ms would round to 0 s and silently drop an SLO), a rate at least MIN_RATE_RPS."""
    if v is None:
        return
    if isinstance(v, float) and not math.isfinite(v):
        raise UserError(f"{name} must be a finite number, got {v}", "give a positive number of seconds or requests")
    if v <= 0:
        raise UserError(f"{name} must be positive, got {v:g}")
    smallest = (MIN_TIME_S * 1e3 if name.endswith("-ms") else MIN_RATE_RPS if name == "--rate"
                else MIN_TIME_S if name in TIME_FLAGS else None)
    if smallest is not None and v < smallest:
        raise UserError(f"{name} must be at least {smallest:g}, got {v:g}")


def _workers(text, flag: str = "--workers", most: int = MAX_WORKERS) -> int:
    """--workers, --ray-actors: a whole number from 1 to ``most`` (0, nan, 1e400, 2.5 are refused)."""
    try:
        n = int(str(text).strip())
    except ValueError:
        raise UserError(f"{flag} must be a whole number, got {text!r}", f"e.g. {flag} 2") from None
    if not 1 <= n <= most:
        raise UserError(f"{flag} must be from 1 to {most}, got {n}", f"e.g. {flag} 2")
    return n


def _ray(args, workers: int) -> tuple[str | None, int | None]:
    """(--ray address, --ray-actors) checked: Ray and --workers are two ways to spread one client."""
    if args.ray is None:
        if args.ray_actors is not None:
            raise UserError("--ray-actors needs --ray", "e.g. --ray --ray-actors 2")
        return None, None
    if workers > 1:
        raise UserError("--ray and --workers both spread the load: give one of them")
    return args.ray, None if args.ray_actors is None else _workers(args.ray_actors, "--ray-actors", MAX_RAY_ACTORS)


def check_out_dir(out_dir: str) -> None:
    """-o must be a directory (new or existing) without a run in it, in a place we can write: checked
    before any file is created."""


    p = Path(out_dir)
    kind = path_kind(p, "-o")                 # a FIFO, a loop, a name too long or a NUL: one line
    if kind == "file":
        raise UserError(f"-o {out_dir} exists and is not a directory", "give a new directory for the run")
    if kind == "dir" and path_kind(p / REQUESTS, REQUESTS) == "file" and (p / REQUESTS).stat().st_size > 0:
        raise UserError(f"{p / REQUESTS} already exists",
                        f"choose another -o, or rebuild its summary with `tokspeed bench-server --summarize {p}`")

    check_outputs(p, RUN_FILES, "run directory")


def _capped(value, cap, what, notes):
    if value is not None and value > cap:
        notes.append(f"{what} {value:g} capped to {cap:g}")
        return cap
    return value


def _config(args, BenchConfig):

    if not args.url:
        raise UserError("bench-server needs the server URL", "e.g. tokspeed bench-server http://127.0.0.1:8000 --model NAME")
    if not args.model:
        raise UserError("bench-server needs --model", "the model name as the server knows it")
    url = endpoint_url(args.url, args.api)
    notes: list[str] = []
    rates = _rates(args.rate, notes)
    conc = args.concurrency or (str(args.max_in_flight or RATE_MAX_IN_FLIGHT) if rates else "1")
    try:
        levels = [int(x) for x in conc.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"cannot read --concurrency {args.concurrency!r}", "write a comma list like 1,2,4,8") from None
    if not levels or min(levels) < 1:
        raise UserError(f"--concurrency must be positive integers, got {args.concurrency!r}")
    if len(levels) > MAX_PHASES:
        notes.append(f"--concurrency has {len(levels)} levels; kept the first {MAX_PHASES}")
        levels = levels[:MAX_PHASES]
    levels = [_capped(c, MAX_CONCURRENCY, "concurrency", notes) for c in levels]
    for name, v in (("--requests", args.requests), ("--duration", args.duration),
                    ("--max-consecutive-failures", args.max_consecutive_failures), ("--max-in-flight", args.max_in_flight),
                    ("--slo-ttft-ms", args.slo_ttft_ms), ("--slo-tpot-ms", args.slo_tpot_ms), ("--slo-e2e-s", args.slo_e2e_s),
                    ("--slo-percentile", args.slo_percentile), ("--warmup-s", args.warmup_s),
                    ("--cooldown-s", args.cooldown_s), ("--max-duration", args.max_duration),
                    ("--max-requests", args.max_requests), ("--sweep-tolerance", args.sweep_tolerance)):
        _positive(name, v)
    if args.slo_percentile > 100:
        raise UserError(f"--slo-percentile must be at most 100, got {args.slo_percentile:g}")
    if args.cooldown is not None and args.cooldown < 0:
        raise UserError(f"--cooldown must be >= 0, got {args.cooldown}")
    if args.max_error_rate is not None and (not math.isfinite(args.max_error_rate) or not 0 <= args.max_error_rate < 1):
        raise UserError(f"--max-error-rate must be a share in [0, 1), got {args.max_error_rate}", "e.g. 0.1 for 10 %")
    if args.sweep:
        if rates and len(rates) == 1:
            rates = [rates[0] * 2 ** i for i in range(MAX_PHASES) if rates[0] * 2 ** i <= MAX_RATE_RPS]
        elif not rates and len(levels) == 1:
            levels = [levels[0] * 2 ** i for i in range(MAX_PHASES) if levels[0] * 2 ** i <= MAX_CONCURRENCY]
    if args.warmup < 0:
        raise UserError(f"--warmup must be >= 0, got {args.warmup}")
    for name in ("connect_timeout", "first_token_timeout", "idle_timeout", "request_timeout"):
        _positive(f"--{name.replace('_', '-')}", getattr(args, name))
    if not math.isfinite(args.temperature) or args.temperature < 0:
        raise UserError(f"--temperature must be a finite number >= 0, got {args.temperature}")
    prompt, c1 = parse_dist(args.prompt_tokens, "--prompt-tokens", MAX_PROMPT_TOKENS)
    out, c2 = parse_dist(args.max_tokens, "--max-tokens", MAX_OUTPUT_TOKENS)
    if c1:
        notes.append(f"--prompt-tokens capped to {MAX_PROMPT_TOKENS}")
    if c2:
        notes.append(f"--max-tokens capped to {MAX_OUTPUT_TOKENS}")
    key, key_source = args.api_key, "--api-key" if args.api_key else None
    if not key:
        for var in KEY_ENV_VARS:
            if os.environ.get(var):
                key, key_source = os.environ[var], f"${var}"
                break
    if args.tokenizer and not os.path.exists(args.tokenizer):
        raise UserError(f"no such tokenizer: {args.tokenizer}", "give a tokenizer.json, a .gguf or a model folder")
    if args.shared_prefix is not None:
        _positive("--shared-prefix", args.shared_prefix)
        if args.shared_prefix > MAX_PROMPT_TOKENS:
            raise UserError(f"--shared-prefix {args.shared_prefix} is above the cap {MAX_PROMPT_TOKENS}")
    if args.hardware:
        get_hardware(args.hardware)  # a bad name fails now, not after the run
    workers = _workers(args.workers)
    ray, ray_actors = _ray(args, workers)
    out_dir = args.output or time.strftime("bench-server-%Y%m%d-%H%M%S")
    check_out_dir(out_dir)
    cfg = BenchConfig(
        url=url, api=args.api, model=args.model, concurrency=levels,
        requests=_capped(args.requests, MAX_REQUESTS, "--requests", notes),
        duration_s=_capped(args.duration, MAX_DURATION_S, "--duration", notes),
        rate_rps=rates or None,
        arrivals=args.arrivals, throughput=args.throughput,
        max_in_flight=(max(levels) if rates and args.concurrency else
                       _capped(args.max_in_flight or RATE_MAX_IN_FLIGHT, MAX_CONCURRENCY, "--max-in-flight", notes)),
        sweep={"tolerance": args.sweep_tolerance / 100} if args.sweep else None,
        slo=_slo(args), window=_window(args), max_error_rate=args.max_error_rate,
        max_run_s=args.max_duration or DEFAULT_MAX_RUN_S, max_run_requests=args.max_requests,
        prompts_file=args.prompts, prompt_column=args.prompt_column, shared_prefix=args.shared_prefix,
        report=not args.no_report,
        warmup=_capped(args.warmup, MAX_WARMUP, "--warmup", notes),
        prompt_tokens=prompt, max_tokens=out, temperature=args.temperature, seed=args.seed,
        ignore_eos=args.ignore_eos, stream_usage=not args.no_stream_usage,
        timeouts=(args.connect_timeout, args.first_token_timeout, args.idle_timeout, args.request_timeout),
        api_key=key, api_key_source=key_source, out_dir=out_dir, hardware=args.hardware,
        predict_model=args.predict_model, quant=args.quant, engine=args.engine,
        tokenizer=args.tokenizer, progress=not args.quiet, notes=notes,
        max_consecutive_failures=args.max_consecutive_failures, workers=workers,
        ray=ray, ray_actors=ray_actors,
    )
    for n in notes:
        sys.stderr.write(f"tokspeed: {n}\n")
    return cfg


def _print(summary: dict, args) -> None:
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return

    print_summary(summary)
