"""Queueing in every serving mode (tokspeed.serving.simulate): Little's law and the decode floor of E2E,
as properties over engines' schedulers, layouts (one instance; disaggregated prefill and decode pools) and
loads (offline, fixed concurrency, constant rate); and the disaggregated queue worked out by hand.

Little's law, L = X W, over a closed loop of C clients: from the first arrival (every client sends at t = 0)
until the last request is sent, C requests are in flight; after it they drain. So the time-averaged
in-flight count L = (sum of E2E) / duration lies in [C (1 - max E2E / duration), C]: the drain is at most
one request long. Over an open loop at a constant rate R with N requests, the run lasts the arrivals'
span (N - 1) / R plus at most the longest E2E, so X = N / duration lies in
[N / ((N - 1) / R + max E2E), N R / (N - 1)]. The bounds come from the inputs (C, R, N) and the per-request
times: a simulation that leaves a queue out of E2E, or counts tokens it did not make, fails them.

E2E >= TTFT + (OSL - 1) x the fastest decode step: a request's later tokens each need a step, and no step
is faster than one decoding row alone (the test's step cost rises with rows and cached tokens)."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokspeed.serving.instance import Instance
from tokspeed.serving.metrics import summarize
from tokspeed.serving.requests import Arrivals, Request, lengths, make_requests
from tokspeed.serving.schedulers import scheduler_for
from tokspeed.serving.simulate import Pools, simulate, simulate_disagg
from tokspeed.serving_api import make_setup

ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp")
REL = 1e-6                 # float summation over thousands of steps


class Affine:
    """A step of ``base`` + ``row`` per decode row + ``tok`` per prompt token + ``kv`` per cached token read."""

    def __init__(self, base, row, tok, kv):
        self.base, self.row, self.tok, self.kv = base, row, tok, kv

    def step(self, b, c, kv_tokens, pairs):
        return self.base + self.row * b + self.tok * c + self.kv * kv_tokens

    def fastest_decode(self) -> float:
        return self.base + self.row


costs = st.builds(Affine, st.floats(1e-3, 3e-2), st.floats(0, 1e-3), st.floats(1e-6, 1e-4), st.floats(0, 1e-8))
loads = st.sampled_from(("offline", "concurrency", "rate"))


def _requests(load, n, isl, osl, conc, rate):
    kind = "offline" if load == "offline" else load
    return make_requests(Arrivals(kind, n, concurrency=conc, rate_rps=rate, poisson=False), lengths(n, isl, osl))


def _run(engine, cost, disagg, load, n, isl, osl, conc, rate, kv):
    sched = scheduler_for(engine).with_(max_seqs=64)
    reqs = _requests(load, n, isl, osl, conc, rate)
    c = conc if load == "concurrency" else 0
    if disagg is None:
        return simulate(cost, sched, kv, reqs, concurrency=c)
    p, d, xfer = disagg
    pools = Pools([Instance(cost, sched, kv) for _ in range(p)],
                  [Instance(cost, sched, kv, prefix_hit=1.0) for _ in range(d)], lambda q: xfer)
    return simulate_disagg(pools, reqs, concurrency=c)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(engine=st.sampled_from(ENGINES), cost=costs, load=loads,
       disagg=st.none() | st.tuples(st.integers(1, 3), st.integers(1, 3), st.floats(0, 0.05)),
       n=st.integers(8, 120), isl=st.integers(1, 3000), osl=st.integers(1, 300), conc=st.integers(1, 48),
       rate=st.floats(0.5, 40), kv=st.sampled_from((math.inf, 200_000.0)))
def test_littles_law_and_the_decode_floor(engine, cost, load, disagg, n, isl, osl, conc, rate, kv):
    out = _run(engine, cost, disagg, load, n, isl, osl, conc, rate, kv)
    assert out.stopped is None and len(out.requests) == n
    dur = out.end_s - out.start_s
    e2e = [r[2] for r in out.requests]
    for arrival, ttft, e, o in out.requests:
        assert 0 < ttft <= e
        assert e >= ttft + (o - 1) * cost.fastest_decode() * (1 - REL)
    assert out.output_tokens == pytest.approx(n * osl, abs=1)       # every token made, none twice
    m = summarize(out, gpus=1)
    assert m["output_tok_s"] == pytest.approx(out.output_tokens / dur)
    if load == "concurrency":
        in_flight = sum(e2e) / dur                                   # L = X W
        assert in_flight <= min(conc, n) * (1 + REL)
        assert in_flight >= min(conc, n) * (1 - max(e2e) / dur) * (1 - REL)
    elif load == "rate":
        x = n / dur
        assert x <= n * rate / (n - 1) * (1 + REL)
        assert x >= n / ((n - 1) / rate + max(e2e)) * (1 - REL)
    else:
        assert max(e2e) == pytest.approx(dur)                        # everyone arrived at the start


def test_disaggregated_request_waits_for_prefill_worker_and_link_by_hand():
    # one prefill worker, one decode worker, steps of 10 ms + 10 us per prompt token, a 1000-token prompt's KV
    # over the link in 50 ms. Two requests at t = 0 (offline), 1000 prompt tokens, 3 output tokens each, budget
    # 1024: the prefill worker takes one prompt a step (1000 + 1000 > 1024 leaves the second 24 tokens, then 976)
    class Step:
        def step(self, b, c, kv, pairs):
            return 0.01 + 1e-5 * c

    sched = scheduler_for("vllm").with_(token_budget=1024, max_seqs=64)
    pools = Pools([Instance(Step(), sched, math.inf)], [Instance(Step(), sched, math.inf, prefix_hit=1.0)],
                  lambda q: 0.05)
    reqs = [Request(0, 0.0, 1000, 3), Request(1, 0.0, 1000, 3)]
    out = simulate_disagg(pools, reqs)
    # prefill: step 1 (0-20.24 ms: 1024 tokens) ends request 0's prompt; step 2 (976 tokens, 19.76 ms) ends
    # request 1's at 40 ms. Link: request 0's KV lands at 70.24 ms; request 1's waits for it and lands at 120.24 ms.
    # decode: request 0's first token leaves with the step starting at 70.24 ms (10 ms: 80.24 ms), then 2 decode
    # steps (100.24 ms). Request 1 lands at 120.24 ms while the decode worker is idle: 130.24, then 150.24 ms.
    got = sorted((round(r[1] * 1e3, 2), round(r[2] * 1e3, 2)) for r in out.requests)
    assert got == [(80.24, 100.24), (130.24, 150.24)]
    assert sorted(round(w * 1e3, 2) for _, w in out.queue_s) == [50.0, 80.24]   # link wait + transfer


def test_issue_example_obeys_littles_law():
    # llama-3.1-70b FP8 on 8 x H200, TensorRT-LLM, 4000/500 tokens, disaggregated 2xTP2 prefill + 2xTP2 decode,
    # 128 clients: output tok/s within the drain bound of C x OSL / mean E2E, TTFT p50 < p90 < p99
    from tokspeed.serving.run import Disagg, Load, evaluate

    setup = make_setup("llama-3.1-70b", "h200-sxm", "tensorrt-llm", quant="FP8", kv_dtype="fp8", isl=4000, osl=500)
    cfg = evaluate(setup, None, 1, Load("concurrency", concurrency=128), None, Disagg(2, 2, 2, 2))
    t = cfg.ttft_ms
    assert t.p50 < t.p90 < t.p99
    little = 128 * 500 / cfg.e2e_mean_s
    assert little * (1 - cfg.e2e_s.p99 / cfg.duration_s) <= cfg.output_tok_s <= little * (1 + REL)


def test_slo_miss_names_the_limit_and_the_margin():
    from tokspeed.serving.metrics import SLO, slo_misses

    res = {"ttft_ms": {"p50": 900.0, "p90": 1800.0, "p99": 2500.0}, "tpot_ms": {"p50": 20.0, "p90": 30.0, "p99": 40.0},
           "e2e_s": {"p50": 5.0, "p90": 6.0, "p99": 9.0}}
    got = slo_misses(res, SLO(ttft_ms=1000, tpot_ms=50, e2e_s=5.5, percentile=90))
    assert [m.metric for m in got] == ["TTFT", "E2E"]          # TPOT p90 30 ms meets its 50 ms
    assert got[0].text() == "TTFT p90 1.8 s > 1 s limit (+80 %)"
    assert got[1].margin_pct == pytest.approx((6.0 / 5.5 - 1) * 100)
    assert not slo_misses(res, SLO(ttft_ms=1000, percentile=50))


def test_pipeline_layouts_are_marked_unmeasured():
    from tokspeed.serving.run import Load, evaluate
    from tokspeed.serving.worker import Parallelism

    setup = make_setup("llama-3.1-8b", "h100-sxm", "vllm", isl=128, osl=16)
    pp = evaluate(setup, Parallelism(tp=2, pp=2), 1, Load("concurrency", concurrency=4, n_requests=8))
    tp = evaluate(setup, Parallelism(tp=4), 1, Load("concurrency", concurrency=4, n_requests=8))
    assert pp.measured is False and tp.measured is True
    assert any("pipeline parallelism" in w for w in pp.warnings) and pp.to_dict()["measured"] is False


def test_serve_names_the_missed_limit_in_the_table_and_json(capsys, monkeypatch):
    from tokspeed.cli.main import main

    monkeypatch.setenv("COLUMNS", "160")
    argv = ["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "vllm", "--disagg", "1x1:1x1", "--isl", "2000",
            "--osl", "32", "--concurrency", "64", "--requests", "128", "--slo-ttft-ms", "1", "--slo-percentile", "90"]
    assert main(argv + ["--json"]) == 0
    c = json.loads(capsys.readouterr().out)["configs"][0]
    miss = c["slo_misses"][0]
    assert c["meets_slo"] is False and miss["metric"] == "TTFT" and miss["percentile"] == 90
    assert miss["margin_pct"] == pytest.approx((c["ttft_ms"]["p90"] / 1.0 - 1) * 100)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "TTFT p90" in out and "limit (+" in out
