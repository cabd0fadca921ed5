"""Batching and serving: ridge batch, continuous batching fixed point, cost and energy (by hand)."""

import pytest

from scale_models import LLAMA3_8B
from tokspeed.predict import predict
from tokspeed.scale.serving import continuous_batching, cost, ridge_batch


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


def test_continuous_batching_fixed_point_by_hand():
    step = lambda b: 0.01 + 0.0001 * b          # noqa: E731  10 ms + 0.1 ms per running sequence
    r = continuous_batching(step, prefill_s_per_token=1e-4, prompt=1000, gen=100, rate=2.0, max_batch=64)
    # prefill share rho = 2 req/s x 1000 tok x 0.1 ms = 0.2
    # B = R G TPOT = 200 (0.01 + 0.0001 ceil(B)) / 0.8 = 2.5 + 0.025 ceil(B) -> B = 2.575 (ceil 3)
    assert r["stable"] and r["prefill_share"] == pytest.approx(0.2)
    assert r["running_sequences"] == pytest.approx(2.575, rel=1e-3)
    assert r["tpot_s"] == pytest.approx(0.0103 / 0.8)
    # TTFT = half an iteration + 2 chunks (512 + 488 tokens) x (iteration + 512 x 0.1 ms)
    assert r["ttft_s"] == pytest.approx(0.0103 / 2 + 2 * (0.0103 + 512e-4))
    assert r["aggregate_tok_s"] == pytest.approx(200)


def test_continuous_batching_overload():
    step = lambda b: 0.01 + 0.0001 * b          # noqa: E731
    assert not continuous_batching(step, 1e-4, 1000, 100, 10.0, 64)["stable"]     # rho = 1
    assert not continuous_batching(step, 1e-4, 1000, 100, 2.0, 2)["stable"]       # needs 3 slots


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
