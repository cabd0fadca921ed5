"""Batching and serving: ridge batch, continuous batching fixed point, cost and energy (by hand)."""

import pytest

from scale_models import LLAMA3_8B
from tokspeed.predict import predict
from tokspeed.serving.curve import continuous_batching, cost, ridge_batch


def test_ridge_batch_h100_fp16_near_peak_over_bandwidth():
    # a weight matmul does 2 FLOP per weight per sequence; F16 weights are 2 bytes -> 1 FLOP/byte per
    # sequence. It turns compute bound near B = 989 TFLOPS / 3.35 TB/s = 295, a little later because
    # the activations (B x (rows + cols) x 2 B, ~10 % of the weight bytes at B ~ 300) also move.
    p = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="ideal", prompt=0, gen=1, users=1)
    r = p.extra["serving"]["ridge_batch"]
    assert 989 / 3.35 < r < 989 / 3.35 * 1.2


def test_ridge_batch_bisection():
    assert ridge_batch(lambda b: "compute" if b >= 37 else "memory") == 37
    assert ridge_batch(lambda b: "memory") is None
    assert ridge_batch(lambda b: "compute") == 1


def test_continuous_batching_alone_by_hand():
    step = lambda b: 0.01 + 0.0001 * b          # noqa: E731  10 ms + 0.1 ms per running sequence
    # one request every 10 s; each takes a 1000-token prefill step (1000 x 0.1 ms = 0.1 s, the budget of
    # 8192 takes the whole prompt) and 99 decode steps of step(1) = 10.1 ms: ~1.1 s, so it runs alone
    r = continuous_batching(step, prefill_s_per_token=1e-4, prompt=1000, gen=100, rate=0.1, max_batch=64)
    assert r["stable"] and r["prefill_share"] == pytest.approx(0.1 * 1000 * 1e-4)
    assert r["ttft_s"] == pytest.approx(0.1)
    assert r["tpot_s"] == pytest.approx(0.0101)
    assert r["running_sequences"] == pytest.approx(1.0)
    assert r["aggregate_tok_s"] == pytest.approx(10.0)


def test_continuous_batching_overload():
    step = lambda b: 0.01 + 0.0001 * b          # noqa: E731
    assert not continuous_batching(step, 1e-4, 1000, 100, 10.0, 64)["stable"]     # rho = 1
    # two slots serve one request in ~0.1 + 99 x 10.2 ms = 1.11 s each: 1.8 req/s < 2 req/s, the queue grows
    assert not continuous_batching(step, 1e-4, 1000, 100, 2.0, 2)["stable"]


def test_cost_and_energy():
    c = cost(aggregate_tok_s=1000, power_w=700, price_per_hour=2.0)
    assert c["usd_per_million_tokens"] == pytest.approx(2 / 3600 / 1000 * 1e6)   # $0.556
    assert c["joules_per_token"] == pytest.approx(0.7)
    assert c["kwh_per_million_tokens"] == pytest.approx(0.7e6 / 3.6e6)
    assert cost(0, 700, 2.0)["usd_per_million_tokens"] is None


def test_users_give_per_user_and_aggregate():
    p = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=128, gen=64, users=32,
                price_per_hour=3.0)
    u = p.extra["serving"]["users"]
    assert u["aggregate_tok_s"] == pytest.approx(32 * u["per_user_tok_s"])
    assert u["fits"] and p.extra["serving"]["max_batch"] >= 32
    c = p.extra["cost"]
    assert c["at_aggregate_tok_s"] == pytest.approx(u["aggregate_tok_s"])
    assert c["usd_per_million_tokens"] == pytest.approx(3.0 / 3600 / u["aggregate_tok_s"] * 1e6)
    assert c["power_w"] == 700                               # H100 SXM TDP
    curve = p.extra["serving"]["batches"]
    assert [r["batch"] for r in curve[:4]] == [1, 2, 4, 8]
    assert curve[-1]["batch"] == min(p.extra["serving"]["max_batch"], 4096)


def test_rate_gives_ttft_and_tpot():
    p = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=1000, gen=200, rate=1.0)
    cb = p.extra["serving"]["continuous"]
    assert cb["stable"] and cb["tpot_s"] > 0 and cb["ttft_s"] > 0
    assert cb["max_rate_rps"] > 1.0
    # TPOT under load is never faster than one sequence alone
    assert cb["tpot_s"] >= p.decode.ms_per_token / 1e3 * 0.99
    over = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=1000, gen=200,
                   rate=cb["max_rate_rps"] * 1.5)
    assert not over.extra["serving"]["continuous"]["stable"]


def test_continuous_batching_carries_its_capacity():
    # a fixed 10 ms decode step and 0.1 ms a prompt token: continuous_batching states the max_rate it checked
    # against (no cache keyed on the step function's identity); an overloaded rate is refused at that figure
    from tokspeed.serving.curve import continuous_batching, max_rate

    step = lambda b: 0.01                  # noqa: E731
    cap = max_rate(step, 1e-4, 100, 10, 8, "vllm")
    # a request costs its 100 prompt tokens (10 ms, the first token with them) and 9 decode steps of 10 ms
    # shared by at most 8 sequences: at most 1 / (0.01 + 9 x 0.01 / 8) = 47.06 requests/s
    assert 0.9 * 47.06 < cap <= 47.06
    cb = continuous_batching(step, 1e-4, 100, 10, 2 * cap, 8, "vllm")
    assert cb["max_rate_rps"] == pytest.approx(cap) and cb["stable"] is False
    assert continuous_batching(step, 1e-4, 100, 0, 1.0, 8, "vllm")["max_rate_rps"] == pytest.approx(
        max_rate(step, 1e-4, 100, 1, 8, "vllm"))
