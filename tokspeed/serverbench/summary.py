"""``summary.json`` from the request records alone (so it can always be rebuilt from ``requests.jsonl``).

Per phase (one concurrency level, or the rate phase), warm-up excluded:
- ``stats``: for each metric, n / mean / p50 / p90 / p99 / min / max over successful requests.
  Percentiles interpolate linearly between order statistics (NumPy's default, "type 7").
  ``itl_s`` pools every inter-token gap of every request; the other metrics are one value per request.
  A request past 32,768 gaps recorded a uniform sample of them (``itl.Gaps``): each of its samples
  counts ``itl_n / len(itl_s)`` times in the ``itl_s`` percentiles, and ``n``/``mean``/``min``/``max``
  are the exact ones it recorded (the stats then say ``"weighted": true``).
  ``decode_tok_s`` per request = (output_tokens - 1) / decode_s: the speed one user sees once tokens flow.
- ``wall_s``: first request start to last request end in the phase (failed ones included).
- ``output_tok_s``: aggregate throughput = output tokens of successful requests / wall_s.
- ``per_user_decode_tok_s``: mean of the per-request ``decode_tok_s``.
- ``errors``: counts by kind; ``cancelled`` (Ctrl-C) is counted apart, not as a failure.
- Warm-up/cool-down windows (``window``): requests of a phase that started within ``warmup_s`` of its
  first start, ended within ``cooldown_s`` of its last end, or are among its last ``cooldown`` to
  end, are counted in ``excluded`` and left out of the statistics and throughput.
- SLOs (``slo``: ``ttft_s``, ``tpot_s``, ``e2e_s`` limits and a ``percentile``): per metric, the share
  of the phase's requests meeting it and whether the phase meets it at that percentile; ``share_all``
  is the share meeting every limit (a failed request meets none), and ``goodput_rps`` = requests
  meeting all / wall_s (without SLOs: successful requests / wall_s).
- ``saturation`` (a sweep): see ``saturation``.
"""

from __future__ import annotations

import math

from ..stats import is_real, percentile, weighted_percentile
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


def itl_stats(recs: list[dict]) -> dict | None:
    """``stats`` of every gap pooled; a sampled request's gaps weighted by ``itl_n / len(itl_s)``."""
    pairs, n, total, lo, hi, weighted = [], 0, 0.0, math.inf, -math.inf, False
    for r in recs:
        gaps = [float(g) for g in (r.get("itl_s") or []) if is_real(g)]
        if not gaps:
            continue
        k, mean = r.get("itl_n"), r.get("itl_mean_s")
        if r.get("itl_capped") and isinstance(k, int) and k > len(gaps) and is_real(mean):
            weighted = True
            pairs += [(g, k / len(gaps)) for g in gaps]
            n, total = n + k, total + mean * k
            lo = min(lo, r["itl_min_s"] if is_real(r.get("itl_min_s")) else min(gaps))
            hi = max(hi, r["itl_max_s"] if is_real(r.get("itl_max_s")) else max(gaps))
        else:
            pairs += [(g, 1) for g in gaps]
            n, total, lo, hi = n + len(gaps), total + sum(gaps), min(lo, *gaps), max(hi, *gaps)
    if not weighted:
        return stats([g for g, _ in pairs])
    return {"n": n, "mean": total / n, "p50": weighted_percentile(pairs, 50), "p90": weighted_percentile(pairs, 90),
            "p99": weighted_percentile(pairs, 99), "min": lo, "max": hi, "weighted": True}


def _metric_values(recs: list[dict], name: str) -> list:
    if name == "itl_s":
        return [g for r in recs for g in (r.get("itl_s") or [])]
    if name == "decode_tok_s":
        return [decode_tok_s(r) for r in recs]
    if name.startswith("server_"):
        key = name[len("server_"):]
        return [(r.get("server_timings") or {}).get(key) for r in recs]
    return [r.get(name) for r in recs]


SLO_METRICS = ("ttft_s", "tpot_s", "e2e_s")
FAILED = 1e300  # what a failed request scores against an SLO: more than any limit
SERVER_SOURCES = ("usage", "ollama", "llama.cpp")  # prompt counts the server itself reported


def windowed(recs: list[dict], window: dict | None) -> tuple[list[dict], int]:
    """The phase's records left after the warm-up / cool-down windows, and how many were excluded."""
    if not window or not recs:
        return recs, 0
    starts = [r["start_s"] for r in recs if r.get("start_s") is not None]
    ends = [r["end_s"] for r in recs if r.get("end_s") is not None]
    if not starts or not ends:
        return recs, 0
    t0, t1 = min(starts), max(ends)
    keep = list(recs)
    if window.get("warmup_s"):
        keep = [r for r in keep if (r.get("start_s") or 0) >= t0 + window["warmup_s"]]
    if window.get("cooldown_s"):
        keep = [r for r in keep if (r.get("end_s") or 0) <= t1 - window["cooldown_s"]]
    n = int(window.get("cooldown") or 0)
    if n:
        last = sorted(keep, key=lambda r: r.get("end_s") or 0)[-n:]
        drop = {id(r) for r in last}
        keep = [r for r in keep if id(r) not in drop]
    return keep, len(recs) - len(keep)


def meets(rec: dict, slo: dict) -> bool:
    """A request meets the SLOs when it succeeded and every limit given holds (a 1-token answer has no TPOT)."""
    if not rec.get("ok"):
        return False
    for m in SLO_METRICS:
        lim = slo.get(m)
        if lim is not None and rec.get(m) is not None and rec[m] > lim:
            return False
        if lim is not None and rec.get(m) is None and m != "tpot_s":
            return False
    return True


def slo_report(recs: list[dict], slo: dict) -> dict:
    """Per SLO metric: the limit, the value at the chosen percentile, whether it holds, the share meeting it."""
    q = slo.get("percentile", 90)
    counted = [r for r in recs if r.get("error") != CANCELLED]
    out: dict = {"percentile": q}
    met_all = True
    for m in SLO_METRICS:
        lim = slo.get(m)
        if lim is None:
            continue
        vals = [r[m] for r in counted if r.get("ok") and r.get(m) is not None]
        failed = sum(1 for r in counted if not r.get("ok"))
        # a failed request counts as missing every SLO: it enters the percentile as a value above any
        # (FAILED, not inf: interpolating inf - inf or inf x 0 would give NaN)
        ranked = vals + [FAILED] * failed
        at_q = percentile(ranked, q) if ranked else None
        share = (sum(1 for v in vals if v <= lim) / len(counted)) if counted else None
        met = at_q is not None and at_q <= lim
        met_all = met_all and met
        out[m] = {"limit": lim, "at_percentile": at_q if at_q is not None and at_q < FAILED / 2 else None,
                  "met": met, "share": share}
    out["share_all"] = (sum(1 for r in counted if meets(r, slo)) / len(counted)) if counted else None
    out["met"] = met_all
    return out


def phase_summary(recs: list[dict], slo: dict | None = None, window: dict | None = None) -> dict:
    first = recs[0] if recs else {}
    all_recs = recs
    recs, excluded = windowed(recs, window)
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
    sources = sorted({r.get("output_tokens_source") for r in ok if r.get("output_tokens_source")})
    prompt_sources = sorted({r.get("prompt_tokens_source") or "none" for r in ok})
    n_good = sum(1 for r in recs if meets(r, slo)) if slo else len(ok)
    out = {
        "phase": first.get("phase"),
        "concurrency": first.get("concurrency"),
        "rate_rps": first.get("rate_rps"),
        "load_kind": first.get("load_kind") or ("rate_rps" if first.get("rate_rps") else "concurrency"),
        "load": first.get("load", first.get("rate_rps") or first.get("concurrency")),
        "requests": len(all_recs),
        "excluded": excluded,
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
        "prompt_tokens_source": prompt_sources,
        "goodput_rps": (n_good / wall) if wall else None,
        "stats": {m: s for m in METRICS
                  if (s := itl_stats(ok) if m == "itl_s" else stats(_metric_values(ok, m))) is not None},
    }
    if slo:
        out["slo"] = slo_report(recs, slo)
    return out


def saturation(phases: list[dict], tolerance: float) -> tuple[dict | None, bool]:
    """Where a sweep saturates, and whether the sweep should stop now.

    Walking the load levels in order: the first phase that misses an SLO ends the sweep (limit = that
    SLO, e.g. ``ttft_s p90``) and the saturation point is the phase before it (the first phase, if even
    it missed); a phase whose output tok/s is not above the previous level's by more than ``tolerance``
    (e.g. 0.05) ends it with limit ``"throughput"`` at that previous level (the knee of the curve). Levels exhausted without either:
    the best phase, limit ``"max_load"`` (the sweep did not reach saturation)."""
    levels = [p for p in phases if p.get("phase") != "throughput" and p.get("output_tok_s") is not None]
    best = None
    for ph in levels:
        slo = ph.get("slo")
        if slo and not slo["met"]:
            broke = next(m for m in SLO_METRICS if m in slo and not slo[m]["met"])
            return _point(best or ph, f"{broke} p{slo['percentile']:g}"), True
        if best is not None and ph["output_tok_s"] <= best["output_tok_s"] * (1 + tolerance):
            return _point(best, "throughput"), True  # the knee: the lowest load giving (within tolerance) the most
        best = ph
    return (_point(best, "max_load") if best else None), False


def _point(ph: dict, limit: str) -> dict:
    key = ph.get("load_kind") or "concurrency"
    return {key: ph.get("load"), "phase": ph.get("phase"), "output_tok_s": ph.get("output_tok_s"),
            "goodput_rps": ph.get("goodput_rps"), "limit": limit}


def prompt_verification(phases: list[dict]) -> str:
    """``server`` when the server counted every prompt, ``tokenizer`` when tokspeed counted some with the
    model's tokenizer, else ``unverified`` (only the target length is known)."""
    srcs = {s for p in phases for s in p.get("prompt_tokens_source") or []}
    if not srcs:
        return "unverified"
    if srcs <= set(SERVER_SOURCES):
        return "server"
    if "none" in srcs:
        return "unverified"
    return "tokenizer"


def summarize(run: dict, records: list[dict], *, partial: bool = False, skipped_lines: int = 0,
              aborted: str | None = None, phase_info: dict | None = None) -> dict:
    """``run`` is the run line (it carries ``slo``, ``window`` and ``sweep`` when asked); ``phase_info``
    per phase extras measured by the client (its CPU use), from the end line."""
    slo = run.get("slo") or None
    window = run.get("window") or None
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
    out = {
        "tokspeed_summary": 1,
        "run": {k: v for k, v in run.items() if k != "type"},
        "partial": partial,
        "aborted": aborted,
        "requests": len(records),
        "warmup_requests": len(warm),
        "ok": sum(1 for r in records if r.get("ok")),
        "failed": failed,
        "cancelled": sum(1 for r in records if r.get("error") == CANCELLED),
        "errors": errors,
        "unreadable_lines": skipped_lines,
        # SSE lines over the 4 MiB cap, dropped unread (their requests may still be ok; their tokens uncounted)
        "sse_lines_dropped": sum(n for r in records if isinstance(n := r.get("sse_lines_dropped"), int) and n > 0),
        "phases": [phase_summary(rs, slo, window) for rs in phases.values()],
    }
    for ph in out["phases"]:
        ph.update((phase_info or {}).get(str(ph["phase"]), {}))
    out["prompt_tokens_verified"] = prompt_verification(out["phases"])
    if run.get("sweep"):
        out["saturation"] = saturation(out["phases"], run["sweep"].get("tolerance", 0.05))[0]
    return out
