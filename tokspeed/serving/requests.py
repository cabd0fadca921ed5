"""The requests a simulation serves: when each arrives and how long its prompt and output are.

Arrivals (``Arrivals.kind``):
- ``offline``: every request at t = 0 (max throughput, trtllm-bench / vLLM benchmark_throughput);
- ``concurrency``: C clients, each sending its next request when the previous one ends (closed loop);
  the scheduler issues them, so their times are not fixed here;
- ``rate``: an open loop at R requests/s, Poisson (exponential gaps, seeded) or constant gaps;
- ``trace``: the times and lengths of a recorded run (``bench-server``'s ``requests.jsonl``).
Lengths are fixed (ISL/OSL) or drawn uniformly from [ratio x nominal, nominal] (bench_serving's
``random_range_ratio``), seeded, so a run is deterministic.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass

from ..errors import UserError
from ..guard.limits import MAX_FIELD_BYTES, json_line
from ..userfile import require_file

KINDS = ("offline", "concurrency", "rate", "trace")
MAX_TRACE_BYTES = 256 << 20      # a requests.jsonl of a million requests is ~200 MB
MAX_TRACE_REQUESTS = 200_000     # requests one simulation replays (tokspeed serve's --requests cap)


@dataclass
class Request:
    rid: int
    arrival: float          # seconds; closed-loop requests get theirs when they are issued
    isl: int                # prompt tokens
    osl: int                # output tokens (>= 1)


@dataclass(frozen=True)
class Arrivals:
    kind: str
    n_requests: int
    concurrency: int = 0
    rate_rps: float = 0.0
    poisson: bool = True
    seed: int = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UserError(f"arrival kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(self.n_requests, int) or self.n_requests < 1:
            raise UserError(f"n_requests must be an integer >= 1, got {self.n_requests!r}")
        if self.kind == "concurrency" and (not isinstance(self.concurrency, int) or self.concurrency < 1):
            raise UserError(f"concurrency must be an integer >= 1, got {self.concurrency!r}")
        if self.kind == "rate" and not (isinstance(self.rate_rps, (int, float)) and math.isfinite(self.rate_rps)
                                        and self.rate_rps > 0):
            raise UserError(f"rate_rps must be a finite number > 0, got {self.rate_rps!r}")


def check_length(name: str, v, lo: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > 1 << 24:
        raise UserError(f"{name} must be an integer in [{lo}, {1 << 24}], got {v!r}")
    return v


def lengths(n: int, isl: int, osl: int, ratio: float = 1.0, seed: int = 0) -> list[tuple[int, int]]:
    """(isl, osl) of ``n`` requests: fixed, or uniform in [ratio x nominal, nominal] (seeded)."""
    check_length("isl", isl, 0)
    check_length("osl", osl, 1)
    if not (isinstance(ratio, (int, float)) and math.isfinite(ratio) and 0 <= ratio <= 1):
        raise UserError(f"length ratio must be in [0, 1], got {ratio!r}")
    if ratio >= 1:
        return [(isl, osl)] * n
    rng = random.Random(seed + 1)
    return [(rng.randint(int(isl * ratio), isl), rng.randint(max(1, int(osl * ratio)), osl)) for _ in range(n)]


def make_requests(arr: Arrivals, sizes: list[tuple[int, int]]) -> list[Request]:
    """The requests in arrival order (closed-loop ones at t = 0; the scheduler re-times them)."""
    if len(sizes) < arr.n_requests:
        raise UserError(f"{arr.n_requests} requests but {len(sizes)} lengths")
    times = [0.0] * arr.n_requests
    if arr.kind == "rate":
        gap = 1.0 / arr.rate_rps
        rng = random.Random(arr.seed)
        t = 0.0
        for i in range(arr.n_requests):
            times[i] = t
            t += rng.expovariate(arr.rate_rps) if arr.poisson else gap
    return [Request(i, times[i], *sizes[i]) for i in range(arr.n_requests)]


def read_trace(path) -> list[Request]:
    """Requests of a recorded run: one JSON object per line with a start time (``start``/``t``/``sent_at``,
    seconds; bench-server writes ``start_unix_s``) and token counts (``prompt_tokens``/``isl``,
    ``output_tokens``/``completion_tokens``/``osl``). Times are shifted so the first request arrives at 0.
    Read as a stream of bounded lines from a regular file (``guard.limits``: a line at most ``MAX_FIELD_BYTES``,
    nesting capped), at most ``MAX_TRACE_REQUESTS`` requests: memory holds one line and the small requests."""
    p = require_file(path, "requests file", "a bench-server requests.jsonl")
    out = []
    try:
        with open(p, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_TRACE_BYTES:
                raise UserError(f"{p}: larger than {MAX_TRACE_BYTES >> 20} MiB: not a requests file")
            for n, raw in enumerate(iter(lambda: f.readline(MAX_FIELD_BYTES + 1), b""), 1):
                if len(raw) > MAX_FIELD_BYTES:
                    raise UserError(f"{p}: line {n} is longer than {MAX_FIELD_BYTES >> 20} MiB")
                line = raw.decode("utf-8").strip()
                if not line:
                    continue
                r = json_line(line, f"{p}: line {n}")
                if not isinstance(r, dict):
                    raise UserError(f"{p}: line {n} is not a JSON object")
                if r.get("type") == "run" or r.get("error"):
                    continue            # bench-server's header line; failed requests carry no lengths
                t = _first(r, ("start", "t", "sent_at", "start_s", "start_unix_s"), float)
                isl = _first(r, ("prompt_tokens", "isl", "input_tokens"), int)
                osl = _first(r, ("output_tokens", "completion_tokens", "osl"), int)
                if t is None or isl is None or osl is None:
                    continue
                if len(out) >= MAX_TRACE_REQUESTS:
                    raise UserError(f"{p}: more than {MAX_TRACE_REQUESTS:,} requests", "replay a part of the run")
                out.append(Request(n - 1, t, check_length("prompt_tokens", isl, 0),
                                   check_length("output_tokens", max(osl, 1), 1)))
    except OSError as e:
        raise UserError(f"cannot read requests file {p}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{p}: not UTF-8 text") from None
    if not out:
        raise UserError(f"{p}: no request with a start time and token counts",
                        "each line needs start (or start_unix_s), prompt_tokens and output_tokens")
    t0 = min(r.arrival for r in out)
    for r in out:
        r.arrival -= t0
    out.sort(key=lambda r: (r.arrival, r.rid))
    return out


def _first(row: dict, keys, kind):
    for k in keys:
        v = row.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            return kind(v)
    return None
