"""What one serving configuration gives (``run.evaluate``), typed: the ``tokspeed serve --json`` config
(PRODUCT.md's contract: ``layout{tp, pp, ep, dp, replicas, disagg}``, ``concurrency, rate_rps, output_tok_s,
output_tok_s_per_gpu, tok_s_per_user, ttft_ms{p50,p90,p99}, tpot_ms{...}, itl_ms{...}, e2e_s{...}, meets_slo,
band{low, high}``) and its diagnostics; ``to_dict`` writes exactly those keys, the optional ones only when set."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spread:
    """Percentiles p50/p90/p99 of a metric (None: no request measured it)."""
    p50: float | None
    p90: float | None
    p99: float | None

    @classmethod
    def of(cls, d: dict) -> "Spread":
        return cls(d.get("p50"), d.get("p90"), d.get("p99"))

    def at(self, q: float) -> float | None:
        """The value at percentile ``q`` (one of 50, 90, 99; else the nearest above)."""
        return self.p50 if q <= 50 else self.p90 if q <= 90 else self.p99

    def to_dict(self) -> dict:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99}


@dataclass
class ServingConfig:
    layout: dict                   # {tp, pp, ep, dp, replicas, disagg}
    gpus: int
    concurrency: int
    rate_rps: float | None
    output_tok_s: float
    output_tok_s_per_gpu: float
    tok_s_per_user: float | None
    ttft_ms: Spread
    tpot_ms: Spread
    itl_ms: Spread
    e2e_s: Spread
    meets_slo: bool | None
    band: dict                     # {low, high} output tok/s
    kv_pool_tokens: float
    mean_running: float
    preemptions: int
    requests: int
    e2e_mean_s: float | None
    duration_s: float
    measured: bool = True          # a serving measurement is behind the layout (not PP: ``unmodelled``)
    goodput_rps: float | None = None
    goodput_tok_s: float | None = None
    slo_misses: list = field(default_factory=list)     # ``metrics.SLOMiss`` dicts
    stopped: str | None = None
    warnings: list = field(default_factory=list)
    kv_transfer_ms: float | None = None                 # disaggregated: one ISL prompt's KV over the link
    prefill_ms: Spread | None = None                    # disaggregated: arrival to prefill done
    kv_wait_ms: Spread | None = None                    # disaggregated: link wait + transfer

    def to_dict(self) -> dict:
        out = {"layout": self.layout, "gpus": self.gpus, "concurrency": self.concurrency, "rate_rps": self.rate_rps,
               "output_tok_s": self.output_tok_s, "output_tok_s_per_gpu": self.output_tok_s_per_gpu,
               "tok_s_per_user": self.tok_s_per_user, "ttft_ms": self.ttft_ms.to_dict(),
               "tpot_ms": self.tpot_ms.to_dict(), "itl_ms": self.itl_ms.to_dict(), "e2e_s": self.e2e_s.to_dict(),
               "meets_slo": self.meets_slo, "band": self.band, "kv_pool_tokens": self.kv_pool_tokens,
               "mean_running": self.mean_running, "preemptions": self.preemptions, "requests": self.requests,
               "e2e_mean_s": self.e2e_mean_s, "duration_s": self.duration_s, "measured": self.measured}
        for k in ("goodput_rps", "goodput_tok_s", "stopped", "kv_transfer_ms"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        for k in ("slo_misses", "warnings"):
            if getattr(self, k):
                out[k] = list(getattr(self, k))
        for k in ("prefill_ms", "kv_wait_ms"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k).to_dict()
        return out


@dataclass(frozen=True)
class FrontierPoint:
    tok_s_per_gpu: float
    tok_s_per_user: float

    def to_dict(self) -> dict:
        return {"tok_s_per_gpu": self.tok_s_per_gpu, "tok_s_per_user": self.tok_s_per_user}
