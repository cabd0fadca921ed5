"""TTFT as an HTTP streaming client counts it (serving/metrics.client_view): the first chunk with text comes
``lead_tokens`` tokens after the engine's first token; E2E is unchanged and TPOT is counted from the client's TTFT,
as benchmark_serving does ((E2E - TTFT) / (output tokens - 1)). Values by hand."""

from types import SimpleNamespace

import pytest

from tokspeed.serving.metrics import client_view, summarize


def _outcome(reqs):
    return SimpleNamespace(requests=reqs, end_s=max(r[2] for r in reqs), start_s=0.0,
                           output_tokens=sum(r[3] for r in reqs), itl=[], mean_running=1.0, peak_running=1,
                           preemptions=0, steps=1, stopped=None)


def test_lead_tokens_move_ttft_by_the_requests_own_token_interval():
    # first token at 0.10 s, last (the 101st) at 1.10 s: 10 ms a token; 4 lead tokens: text at 0.14 s
    (_, ttft, e2e, osl), = client_view([(0.0, 0.10, 1.10, 101)], 4)
    assert ttft == pytest.approx(0.14) and e2e == 1.10 and osl == 101
    m = summarize(_outcome([(0.0, 0.10, 1.10, 101)]), 1, lead_tokens=4)
    assert m["ttft_ms"]["p50"] == pytest.approx(140.0)
    assert m["tpot_ms"]["p50"] == pytest.approx((1.10 - 0.14) / 100 * 1e3)      # 9.6 ms
    assert m["e2e_s"]["p50"] == pytest.approx(1.10)
    # E2E = TTFT + (OSL - 1) x TPOT, exactly, as the client counts them
    assert m["ttft_ms"]["p50"] / 1e3 + 100 * m["tpot_ms"]["p50"] / 1e3 == pytest.approx(m["e2e_s"]["p50"])


def test_a_reply_shorter_than_its_lead_shows_text_at_its_end_and_none_means_the_engines_token():
    assert client_view([(0.0, 0.10, 0.13, 3)], 4) == [(0.0, 0.13, 0.13, 3)]
    assert client_view([(0.0, 0.10, 1.10, 101)], 0) == [(0.0, 0.10, 1.10, 101)]


def test_in_process_rows_take_no_lead(monkeypatch):
    # the CSV's TensorRT-LLM rows time TTFT inside trtllm-bench: evaluate_case zeroes the lead whatever the constants
    from tokspeed.serving import rows
    seen = {}

    def fake_setup(*a, fitted=None, **k):
        seen["fitted"] = fitted
        raise RuntimeError("stop")

    case = SimpleNamespace(engine="tensorrt-llm", hardware="h100-sxm", model="llama-3.1-8b", quant="FP8", kv_dtype="fp8",
                           isl=128, osl=128, length_ratio=1.0, engine_version="")
    with pytest.raises(RuntimeError):
        rows.evaluate_case(case, {"gpu_scale": 1.0, "step_s": 0.0, "link_scale": 1.0, "lead_tokens": 5.0},
                           make_setup=fake_setup)
    assert seen["fitted"]["lead_tokens"] == 0.0
