"""``summary.json`` from the request records alone (so it can always be rebuilt from ``requests.jsonl``).

Per phase (one concurrency level, or the rate phase), warm-up excluded:
- ``stats``: for each metric, n / mean / p50 / p90 / p99 / min / max over successful requests.
  Percentiles interpolate linearly between order statistics (NumPy's default, "type 7").
  ``itl_s`` pools every inter-token gap of every request; the other metrics are one value per request.
  ``decode_tok_s`` per request = (output_tokens - 1) / decode_s: the speed one user sees once tokens flow.
- ``wall_s``: first request start to last request end in the phase (failed ones included).
- ``output_tok_s``: aggregate throughput = output tokens of successful requests / wall_s.
- ``per_user_decode_tok_s``: mean of the per-request ``decode_tok_s``.
- ``errors``: counts by kind; ``cancelled`` (Ctrl-C) is counted apart, not as a failure.
"""

from __future__ import annotations

from ..stats import percentile
from .client import CANCELLED

METRICS = ("ttft_s", "tpot_s", "itl_s", "e2e_s", "decode_s", "decode_tok_s", "prompt_tokens", "output_tokens",
           "target_prompt_tokens", "queued_s", "server_decode_tok_s", "server_prefill_tok_s")


def stats(values: list[float]) -> dict | None:
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None
    return {"n": len(xs), "mean": sum(xs) / len(xs), "p50": percentile(xs, 50), "p90": percentile(xs, 90),
            "p99": percentile(xs, 99), "min": min(xs), "max": max(xs)}


def decode_tok_s(rec: dict) -> float | None:
    n, d = rec.get("output_tokens"), rec.get("decode_s")
    if n is None or d is None or n < 2 or d <= 0:
        return None
    return (n - 1) / d


def _metric_values(recs: list[dict], name: str) -> list:
    if name == "itl_s":
        return [g for r in recs for g in (r.get("itl_s") or [])]
    if name == "decode_tok_s":
        return [decode_tok_s(r) for r in recs]
    if name.startswith("server_"):
        key = name[len("server_"):]
        return [(r.get("server_timings") or {}).get(key) for r in recs]
    return [r.get(name) for r in recs]


def phase_summary(recs: list[dict]) -> dict:
    ok = [r for r in recs if r.get("ok")]
    failed = [r for r in recs if not r.get("ok") and r.get("error") != CANCELLED]
    errors: dict[str, int] = {}
    for r in failed:
        errors[r.get("error") or "unknown"] = errors.get(r.get("error") or "unknown", 0) + 1
    starts = [r["start_s"] for r in recs if r.get("start_s") is not None]
    ends = [r["end_s"] for r in recs if r.get("end_s") is not None]
    wall = (max(ends) - min(starts)) if starts and ends else None
    out_tokens = sum(r.get("output_tokens") or 0 for r in ok)
    per_user = [v for v in (decode_tok_s(r) for r in ok) if v is not None]
    first = recs[0] if recs else {}
    sources = sorted({r.get("output_tokens_source") for r in ok if r.get("output_tokens_source")})
    return {
        "phase": first.get("phase"),
        "concurrency": first.get("concurrency"),
        "rate_rps": first.get("rate_rps"),
        "requests": len(recs),
        "ok": len(ok),
        "failed": len(failed),
        "cancelled": sum(1 for r in recs if r.get("error") == CANCELLED),
        "errors": errors,
        "wall_s": wall,
        "request_rps": (len(ok) / wall) if wall else None,
        "output_tokens": out_tokens,
        "output_tok_s": (out_tokens / wall) if wall else None,
        "per_user_decode_tok_s": (sum(per_user) / len(per_user)) if per_user else None,
        "output_tokens_source": sources,
        "stats": {m: s for m in METRICS if (s := stats(_metric_values(ok, m))) is not None},
    }


def summarize(run: dict, records: list[dict], *, partial: bool = False, skipped_lines: int = 0) -> dict:
    measured = [r for r in records if not r.get("warmup")]
    warm = [r for r in records if r.get("warmup")]
    phases: dict[str, list[dict]] = {}
    for r in measured:
        phases.setdefault(str(r.get("phase")), []).append(r)
    errors: dict[str, int] = {}
    for r in records:
        if not r.get("ok") and r.get("error") not in (None, CANCELLED):
            errors[r["error"]] = errors.get(r["error"], 0) + 1
    failed = sum(errors.values())
    return {
        "tokspeed_summary": 1,
        "run": {k: v for k, v in run.items() if k != "type"},
        "partial": partial,
        "requests": len(records),
        "warmup_requests": len(warm),
        "ok": sum(1 for r in records if r.get("ok")),
        "failed": failed,
        "cancelled": sum(1 for r in records if r.get("error") == CANCELLED),
        "errors": errors,
        "unreadable_lines": skipped_lines,
        "phases": [phase_summary(rs) for rs in phases.values()],
    }
