"""Every "how" of predict's table is the working of its value, from the same numbers (issue 29): the decode
bound's ``BW GB/s ÷ bytes`` gives the bound under offload, tensor and pipeline parallel, MoE and batch; the
expected row's ms/token is 1000 / tok/s; the error band never exceeds the ideal bound."""

import re

import pytest

import tokspeed
from tokspeed.engines import bands
from tokspeed.predict import band_high, band_low
from tokspeed.report.predict_table import bound_how
from tokspeed.stats import band_error_pct

UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}

CASES = [
    ("llama-3.1-8b", "rtx-4090", dict(quant="Q4_K_M")),
    ("llama-3.1-70b", "rtx-4090", dict(quant="Q4_K_M", offload="auto")),                   # offload
    ("deepseek-v3", "h200-sxm", dict(gpus=8, engine="vllm")),                             # TP, MoE, MLA
    ("llama-3.1-70b", "h100-sxm", dict(gpus=4, parallel="pp", quant="F16")),               # PP
    ("mixtral-8x7b", "h100-sxm", dict(quant="Q4_K_M")),                                    # MoE
    ("llama-3.1-8b", "rtx-4090", dict(quant="Q4_K_M", batch=8)),                           # batch
    ("qwen3-30b-a3b", "ddr5-5600-2ch", dict(quant="Q4_K_M")),                              # CPU
]


def _parse(how: str):
    m = re.match(r"([\d,.]+) GB/s.*÷ (?:\((\d+) × )?([\d.]+) ([KMGT]?B)", how)
    assert m, how
    bw = float(m.group(1).replace(",", "")) * 1e9
    batch = int(m.group(2) or 1)
    return bw, batch, float(m.group(3)) * UNITS[m.group(4)]


@pytest.mark.parametrize("model,hw,kw", CASES)
def test_the_bound_how_gives_the_bound(model, hw, kw):
    p = tokspeed.predict(model, hw, **kw)
    bw, batch, per_token = _parse(bound_how(p))
    assert batch == p.batch
    # the printed figures are rounded to 3-4 digits, and the device's own bandwidth stands in for the implied
    # one within 0.5 %: BW / (batch x bytes) is the bound within 1.5 %
    assert bw / (batch * per_token) == pytest.approx(p.decode.bound_tok_s, rel=0.015)


def test_offload_names_both_memories_and_is_not_the_vram_bound():
    p = tokspeed.predict("llama-3.1-70b", "rtx-4090", quant="Q4_K_M", offload="auto")
    how = bound_how(p)
    assert "effective" in how and "1008 GB/s" in how and f"{p.offload['cpu_bandwidth_gbps']:g} GB/s" in how
    # the contradiction: 1008 GB/s over the bytes per token would be ~24 tok/s, not the bound
    assert 1008e9 / p.decode.bytes_per_token > 4 * p.decode.bound_tok_s


@pytest.mark.parametrize("model,hw,kw", CASES)
def test_band_never_exceeds_the_bound_and_ms_per_token_is_its_inverse(model, hw, kw):
    p = tokspeed.predict(model, hw, **kw)
    d, f = p.decode, p.prefill
    assert d.tok_s_low <= d.tok_s <= d.tok_s_high <= d.bound_tok_s * (1 + 1e-12)
    assert d.ms_per_token == pytest.approx(1000 / d.tok_s)
    if f.tok_s:
        assert f.tok_s_high <= f.bound_tok_s * (1 + 1e-12)
        assert f.tok_s == pytest.approx(p.batch * p.prompt / f.seconds)


@pytest.mark.parametrize("hw", ["ddr5-5600-2ch", "strix-halo", "rtx-4090", "m4-max-40", "h100-sxm"])
def test_band_top_is_the_bound_where_the_fitted_error_would_pass_it(hw):
    # the DDR5-5600 2-channel CPU (range to 19.7 tok/s, bound 19.0) and Strix Halo (58.7 vs 54.4)
    p = tokspeed.predict("llama-3.1-8b", hw, quant="Q4_K_M")
    d = p.decode
    # the band the answer states (the profile's, in its weight format's cell: K-quants on a fitted CUDA or Metal
    # family, tests/test_band_cells.py); max(predicted / measured, measured / predicted) <= 1 + b
    b = bands.stated_pct(p.engine_profile, "decode", **bands.question_of(p.spec, p.quant, p.context, 1)) / 100
    assert d.tok_s_high == pytest.approx(min(d.tok_s * (1 + b), d.bound_tok_s))
    assert d.tok_s_low == pytest.approx(d.tok_s / (1 + b))


def test_band_is_symmetric_in_ratio():
    """A band of b holds measurements from prediction / (1 + b) to prediction x (1 + b): a prediction twice too fast
    and one twice too slow are both 100 % off (the error the conformal bands are fitted on)."""
    assert band_low(100.0, 0.25) == pytest.approx(80.0) and band_high(100.0, 0.25, 1e9) == pytest.approx(125.0)
    assert band_high(100.0, 3.0, 1e9) == pytest.approx(400.0)        # finite past 100 %
    assert band_high(100.0, 3.0, 150.0) == 150.0                     # never above the bound
    assert band_error_pct(100.0) == pytest.approx(100.0)             # predicted 2x the measurement
    assert band_error_pct(-50.0) == pytest.approx(100.0)             # predicted half of it
    assert band_error_pct(-20.0) == pytest.approx(25.0)              # 80 vs 100: 100 / 80 - 1


def test_time_to_first_token_says_how_it_is_made():
    """A fitted server engine's TTFT is its prefill steps (the last samples the first token) and the decode steps of the
    tokens before a streaming client's first text; llama.cpp adds a step."""
    from tokspeed.report.text import ttft_how

    from tokspeed.serving.fitted import predict_constants

    served = tokspeed.predict("llama-3.1-8b", "h100-sxm", engine="vllm")
    lead = predict_constants("vllm", "NVIDIA")["lead_tokens"]        # tokens before a streaming client's text
    assert served.ttft_s == pytest.approx(served.prefill.seconds + lead * served.decode.ms_per_token / 1e3, rel=1e-12)
    assert ttft_how(served).startswith(f"prefill steps + {lead:g} decode steps")
    local = tokspeed.predict("llama-3.1-8b", "h100-sxm", engine="llama.cpp-cuda")
    assert local.ttft_s > local.prefill.seconds and ttft_how(local) == "prefill + one sampling step"
