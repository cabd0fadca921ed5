"""What a simulated run reports, as serving benchmarks count it (vLLM ``benchmark_serving``, SGLang
``bench_serving``, ``tokspeed bench-server``):

- TTFT: arrival to the first token a streaming client shows: the engine's first token, or with ``lead_tokens``
  (``client_view``) the token after that many more, which HTTP benchmark clients count because the first chunks of
  a reply carry no text (SGLang's ``bench_serving`` times the first chunk whose ``text`` is non-empty);
  E2E: arrival to last token;
- TPOT: per request ``(E2E - TTFT) / (output tokens - 1)`` (requests of one output token have none);
- ITL: every gap between two tokens of a sequence (one per decode step and sequence);
- percentiles p50/p90/p99 by linear interpolation between order statistics (numpy's default), ITL's
  weighted by the tokens a gap stands for: ``tokspeed.stats``, the functions bench-server's summary uses;
- output tok/s: output tokens / (last token - first arrival); per GPU = that / GPUs; per user = the
  median of 1 / TPOT (interactivity);
- goodput: requests/s (and output tok/s) of the requests that meet every SLO given.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import stats

PCTS = (50, 90, 99)


def percentile(values, q: float) -> float | None:
    """``stats.percentile`` (linear between order statistics), None for no values."""
    xs = list(values)
    return stats.percentile(xs, q) if xs else None


def weighted_percentile(pairs, q: float) -> float | None:
    """``stats.weighted_percentile`` of (value, count) pairs (ITL gaps weighted by the tokens they stand
    for, as bench-server's summary weights its sampled gaps), None for no weight."""
    xs = [(v, w) for v, w in pairs if w > 0]
    return stats.weighted_percentile(xs, q) if xs else None


def spread(values, scale: float = 1.0) -> dict:
    return {f"p{q}": (None if (v := percentile(values, q)) is None else v * scale) for q in PCTS}


@dataclass(frozen=True)
class SLO:
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_s: float | None = None
    percentile: float = 50.0

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2e_s))

    def to_dict(self) -> dict:
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_s": self.e2e_s, "percentile": self.percentile}


def tpot_of(ttft: float, e2e: float, osl: int) -> float | None:
    return (e2e - ttft) / (osl - 1) if osl > 1 else None


def client_view(reqs, lead_tokens: float) -> list:
    """The requests ``(arrival, ttft, e2e, osl)`` with TTFT counted ``lead_tokens`` tokens later, at the request's own
    mean inter-token time (E2E unchanged; a request of fewer tokens shows its text at its end)."""
    if not lead_tokens:
        return list(reqs)
    out = []
    for arrival, ttft, e2e, osl in reqs:
        shown = e2e if osl - 1 <= lead_tokens else ttft + lead_tokens * (e2e - ttft) / (osl - 1)
        out.append((arrival, shown, e2e, osl))
    return out


def summarize(out, gpus: int, slo: SLO | None = None, lead_tokens: float = 0.0) -> dict:
    """The metrics of a simulation ``Outcome`` (``tokspeed.serving.simulate``); ``lead_tokens``: ``client_view``."""
    reqs = client_view(out.requests, lead_tokens)
    ttft = [r[1] for r in reqs]
    e2e = [r[2] for r in reqs]
    tpot = [x for r in reqs if (x := tpot_of(r[1], r[2], r[3])) is not None]
    dur = out.end_s - out.start_s
    total = out.output_tokens / dur if dur > 0 else 0.0
    tpot_ms = spread(tpot, 1e3)
    res = {"output_tok_s": total, "output_tok_s_per_gpu": total / gpus,
           "tok_s_per_user": (1e3 / tpot_ms["p50"]) if tpot_ms["p50"] else None,
           "ttft_ms": spread(ttft, 1e3), "tpot_ms": tpot_ms,
           "itl_ms": {f"p{q}": (None if (v := weighted_percentile(out.itl, q)) is None else v * 1e3) for q in PCTS},
           "e2e_s": spread(e2e), "e2e_mean_s": sum(e2e) / len(e2e) if e2e else None, "requests": len(reqs),
           "duration_s": dur,
           "request_rate_rps": len(reqs) / dur if dur > 0 else 0.0,
           "mean_running": out.mean_running, "peak_running": out.peak_running, "preemptions": out.preemptions,
           "steps": out.steps}
    if slo is not None and slo.any:
        misses = slo_misses(res, slo)
        res["meets_slo"] = not misses
        res["slo_misses"] = [x.to_dict() for x in misses]
        good = [r for r in reqs if _request_ok(r, slo)]
        res["goodput_rps"] = len(good) / dur if dur > 0 else 0.0
        res["goodput_tok_s"] = sum(r[3] for r in good) / dur if dur > 0 else 0.0
    else:
        res["meets_slo"] = None
    if out.stopped:
        res["stopped"] = out.stopped
    return res


def _pct(d: dict, q: float):
    """A spread's value at ``q`` (one of PCTS; else the nearest above)."""
    key = min((p for p in PCTS if p >= q), default=PCTS[-1])
    return d[f"p{key}"]


@dataclass(frozen=True)
class SLOMiss:
    """A limit a configuration misses: its metric at the SLO's percentile, the limit and the margin."""
    metric: str               # "TTFT" | "TPOT" | "E2E"
    percentile: int
    value: float | None       # in the limit's unit (ms, or s for E2E); None: no request measured it
    limit: float
    unit: str

    @property
    def margin_pct(self) -> float | None:
        return None if self.value is None else (self.value / self.limit - 1) * 100

    def text(self) -> str:
        """"TTFT p90 1.8 s > 1 s limit (+80 %)"."""
        if self.value is None:
            return f"{self.metric} p{self.percentile}: no request measured (limit {_size(self.limit, self.unit)})"
        return (f"{self.metric} p{self.percentile} {_size(self.value, self.unit)} > {_size(self.limit, self.unit)} "
                f"limit (+{self.margin_pct:.0f} %)")

    def to_dict(self) -> dict:
        return {"metric": self.metric, "percentile": self.percentile, "value": self.value, "limit": self.limit,
                "unit": self.unit, "margin_pct": self.margin_pct, "text": self.text()}


def _size(v: float, unit: str) -> str:
    """A time in its limit's unit, ms past 1,000 written in s."""
    if unit == "ms" and v >= 1000:
        return f"{v / 1e3:.3g} s"
    return f"{v:.3g} {unit}"


def slo_misses(res: dict, slo: SLO) -> list[SLOMiss]:
    """The limits ``res`` misses at the SLO's percentile (none: it meets them all)."""
    q = min((p for p in PCTS if p >= slo.percentile), default=PCTS[-1])
    checks = (("TTFT", slo.ttft_ms, res["ttft_ms"], "ms"), ("TPOT", slo.tpot_ms, res["tpot_ms"], "ms"),
              ("E2E", slo.e2e_s, res["e2e_s"], "s"))
    out = []
    for name, limit, spread_, unit in checks:
        if limit is not None:
            v = _pct(spread_, slo.percentile)
            if v is None or v > limit:
                out.append(SLOMiss(name, q, v, limit, unit))
    return out


def meets(res: dict, slo: SLO) -> bool:
    return not slo_misses(res, slo)


def _request_ok(r, slo: SLO) -> bool:
    arrival, ttft, e2e, osl = r
    tp = tpot_of(ttft, e2e, osl)
    return ((slo.ttft_ms is None or ttft * 1e3 <= slo.ttft_ms) and (slo.e2e_s is None or e2e <= slo.e2e_s)
            and (slo.tpot_ms is None or tp is None or tp * 1e3 <= slo.tpot_ms))
