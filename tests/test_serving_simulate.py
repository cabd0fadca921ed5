"""The step-level serving simulation against schedules worked out by hand (tokspeed.serving.simulate)."""

import pytest

from tokspeed.serving.metrics import SLO, percentile, summarize, weighted_percentile
from tokspeed.serving.requests import Arrivals, lengths, make_requests
from tokspeed.serving.schedulers import Scheduler, scheduler_for
from tokspeed.serving.simulate import simulate
from tokspeed.prediction_setup import resolve


class Fixed:
    """A step of ``base`` seconds plus ``per_prefill`` per prompt token and ``per_row`` per decode row."""

    def __init__(self, base, per_prefill=0.0, per_row=0.0):
        self.base, self.per_prefill, self.per_row = base, per_prefill, per_row

    def step(self, b, c, kv, pairs):
        return self.base + c * self.per_prefill + b * self.per_row


def sched(**kw):
    base = dict(engine="test", token_budget=8192, max_seqs=1024, memory_fraction=0.9, mixed=True, reserve_output=0.0)
    return Scheduler(**{**base, **kw})


def offline(n, isl, osl):
    return make_requests(Arrivals("offline", n), lengths(n, isl, osl))


def test_offline_fixed_step_throughput_by_hand():
    # 10 prompts of 100 tokens fit one step (1000 <= 8192): first tokens at 10 ms; then 10 decode steps of
    # 10 ms each make the other 10 tokens: all done at 110 ms. 10 x 11 tokens / 0.11 s = 1000 tok/s.
    out = simulate(Fixed(0.01), sched(), float("inf"), offline(10, 100, 11))
    m = summarize(out, gpus=2)
    assert out.end_s == pytest.approx(0.11)
    assert m["output_tok_s"] == pytest.approx(1000)
    assert m["output_tok_s_per_gpu"] == pytest.approx(500)
    assert m["ttft_ms"]["p50"] == pytest.approx(10)
    assert m["tpot_ms"]["p99"] == pytest.approx(10)
    assert m["itl_ms"]["p50"] == pytest.approx(10)
    assert m["tok_s_per_user"] == pytest.approx(100)


def test_chunked_prefill_ttft_by_hand():
    # a 2048-token prompt under a 512-token budget: 4 chunks, each step 10 ms + 512 x 10 us = 15.12 ms
    out = simulate(Fixed(0.01, per_prefill=1e-5), sched(token_budget=512), float("inf"), offline(1, 2048, 1))
    assert out.requests[0][1] == pytest.approx(4 * (0.01 + 512e-5))


def test_decodes_take_budget_first():
    # two sequences decoding leave 510 of a 512 budget to a new prompt: a 1020-token prompt needs 2 steps
    reqs = make_requests(Arrivals("trace", 3), [(10, 100), (10, 100), (1020, 1)])
    reqs[2].arrival = 0.005       # arrives while the first step runs
    out = simulate(Fixed(0.01), sched(token_budget=512), float("inf"), reqs)
    third = [r for r in out.requests if r[3] == 1][0]
    # step 1 (0-10 ms): the two short prompts; steps 2-3: 2 decodes + 510 prompt tokens each -> done at 30 ms
    assert third[1] == pytest.approx(0.030 - 0.005)


def test_littles_law_at_fixed_concurrency():
    # 8 clients, 50 output tokens each: every request takes 50 steps of 20 ms (one prefill step that makes the
    # first token, 49 decodes), so a client completes 1 request/s: X = C / T = 8 req/s, 400 tok/s
    reqs = offline(32, 10, 50)
    out = simulate(Fixed(0.02), sched(), float("inf"), reqs, concurrency=8)
    m = summarize(out, gpus=1)
    assert m["request_rate_rps"] == pytest.approx(8.0)
    assert m["output_tok_s"] == pytest.approx(400.0)
    assert out.mean_running == pytest.approx(8.0)       # L = X T = 8 x 1 s
    assert m["e2e_s"]["p50"] == pytest.approx(1.0)


def test_max_seqs_queue():
    # one slot: two requests of 5 tokens run one after the other: 5 steps each, the second waits 5 steps
    out = simulate(Fixed(0.01), sched(max_seqs=1), float("inf"), offline(2, 10, 5))
    ttfts = sorted(r[1] for r in out.requests)
    assert ttfts == pytest.approx([0.01, 0.06])


def test_kv_pool_preempts_and_every_token_is_made():
    # a pool of 300 tokens: 4 prompts of 50 + their growth overflow it; the newest is preempted and redone
    reqs = offline(4, 50, 40)
    out = simulate(Fixed(0.01), sched(), 300, reqs)
    assert out.preemptions >= 1
    assert len(out.requests) == 4
    assert out.output_tokens >= 4 * 40


def test_reservation_never_preempts():
    # TensorRT-LLM's GUARANTEED_NO_EVICT reserves prompt + output: 300 tokens hold 3 requests of 90 at once
    out = simulate(Fixed(0.01), sched(reserve_output=1.0), 300, offline(4, 50, 40))
    assert out.preemptions == 0
    assert out.peak_running == 3
    assert out.output_tokens == 4 * 40


def test_separate_prefill_steps_pause_decodes():
    # SGLang-style: a prompt arriving mid-decode runs as its own step, so the decoder waits one step more
    def reqs():
        r = make_requests(Arrivals("trace", 2), [(10, 20), (10, 1)])
        r[1].arrival = 0.055
        return r

    def decoder_e2e(out):
        return [r[2] for r in out.requests if r[3] == 20][0]

    # the decoder: a prefill step (first token) and 19 decode steps; the newcomer's prompt rides along
    # (mixed) or takes a step of its own
    assert decoder_e2e(simulate(Fixed(0.01), sched(), float("inf"), reqs())) == pytest.approx(0.01 * 20)
    assert decoder_e2e(simulate(Fixed(0.01), sched(mixed=False), float("inf"), reqs())) == pytest.approx(0.01 * 21)


def test_slo_and_goodput():
    out = simulate(Fixed(0.01), sched(), float("inf"), offline(10, 100, 11))
    assert summarize(out, 1, SLO(ttft_ms=20, tpot_ms=15))["meets_slo"] is True
    m = summarize(out, 1, SLO(tpot_ms=5))
    assert m["meets_slo"] is False and m["goodput_rps"] == 0


def test_percentiles_by_hand():
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([0, 10], 90) == pytest.approx(9.0)
    # nine gaps of 1 and one of 5, as numpy.percentile([1] * 9 + [5], q) interpolates them (rank q/100 x 9):
    # p90 at rank 8.1 = 1 + 0.1 x 4, p99 at rank 8.91 = 1 + 0.91 x 4; bench-server's summary gives the same
    assert weighted_percentile([(1.0, 9), (5.0, 1)], 90) == pytest.approx(1.4)
    assert weighted_percentile([(1.0, 9), (5.0, 1)], 99) == pytest.approx(4.64)
    assert weighted_percentile([(0.01, 1), (0.03, 1)], 50) == pytest.approx(0.02)
    assert weighted_percentile([], 50) is None and percentile([], 50) is None


def test_poisson_arrivals_are_seeded():
    a = make_requests(Arrivals("rate", 100, rate_rps=10.0, seed=3), lengths(100, 10, 10))
    b = make_requests(Arrivals("rate", 100, rate_rps=10.0, seed=3), lengths(100, 10, 10))
    assert [r.arrival for r in a] == [r.arrival for r in b]
    # mean gap of an exponential(10/s) over 99 gaps: 0.1 s, within 4 standard errors (0.1 / sqrt(99))
    assert abs(a[-1].arrival / 99 - 0.1) < 4 * 0.1 / 99 ** 0.5
    c = make_requests(Arrivals("rate", 5, rate_rps=4.0, poisson=False), lengths(5, 10, 10))
    assert [r.arrival for r in c] == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])


def test_engine_defaults_are_sourced():
    for e in ("vllm", "sglang", "tensorrt-llm", "llama.cpp-cuda"):
        s = scheduler_for(e)
        assert s.source and s.token_budget >= 1
    assert scheduler_for("llama.cpp-cuda").max_seqs == 4
    assert scheduler_for("sglang").mixed is False


def test_watermark_holds_a_request_back_without_stalling():
    # a pool of 1000 tokens: the first request holds 500; the second needs 495, which fits the pool but not
    # its 1 % watermark (990) while the first runs: it waits for the first to finish, then runs (an engine that
    # runs prefill steps alone used to stop here)
    reqs = make_requests(Arrivals("offline", 2), [(500, 10), (495, 10)])
    for mixed in (True, False):
        out = simulate(Fixed(0.01), sched(mixed=mixed, token_budget=1024), 1000, [*reqs])
        assert out.stopped is None and len(out.requests) == 2
        ttft2 = max(r[1] for r in out.requests)
        assert ttft2 == pytest.approx(0.01 * 11)        # after the first's 10 steps, one prefill step


def test_cuda_graph_batch_sizes_by_hand():
    # SGLang v0.5.6 captures [1, 2, 4, 8, 12] + range(16, 257, 8); vLLM v0.10 [1, 2, 4] + range(8, 513, 8):
    # a decode batch is padded to the next captured size, a larger one runs eagerly as it is
    sg, vl = scheduler_for("sglang"), scheduler_for("vllm")
    assert [sg.graph_batch(b) for b in (1, 3, 5, 9, 12, 13, 250, 256, 257)] == [1, 4, 8, 12, 12, 16, 256, 256, 257]
    assert [vl.graph_batch(b) for b in (3, 5, 9, 100, 512, 513)] == [4, 8, 16, 104, 512, 513]
    assert scheduler_for("tensorrt-llm").graph_batch(13) == 13


def test_decode_step_runs_the_padded_batch():
    # a vLLM decode step of 9 sequences runs its matmuls over 16 rows (the captured size), attention over 9
    from tokspeed.serving.worker import Parallelism, build_worker, resolve_group

    r = resolve_group(resolve, "llama-3.1-8b", "h100-sxm", "vllm", "F16", "f16", 1, 1)
    cost = build_worker(r, Parallelism(), scheduler_for("vllm"), {}, 2048).cost
    dense9 = cost.step(9, 0, 9 * 1000, 0) - cost.attn_decode(9, 9 * 1000)
    assert dense9 == pytest.approx(cost.decode_dense(16), rel=1e-9)
    assert cost.decode_dense(16) > cost.decode_dense(9)


def test_closed_loop_request_waits_for_the_running_step():
    # two clients, 10 ms steps: A (3 tokens) and B (100) prefill in step 1 (0-10 ms), A decodes in steps 2-3 and
    # is done at 30 ms. Its client's next request reaches the engine after step 4 (30-40 ms) has started with
    # B's decode, so it prefills in step 5: first token at 50 ms, TTFT 20 ms (two steps), not 10
    reqs = make_requests(Arrivals("offline", 3), [(10, 3), (10, 100), (10, 3)])
    out = simulate(Fixed(0.01), sched(), float("inf"), reqs, concurrency=2)
    third = min((r for r in out.requests if r[3] == 3), key=lambda r: -r[0])
    assert third[0] == pytest.approx(0.030) and third[1] == pytest.approx(0.020)
