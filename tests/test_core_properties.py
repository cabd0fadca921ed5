"""Property tests: monotonicity laws any honest prediction obeys."""

from hypothesis import given, settings
from hypothesis import strategies as st

import tokspeed
from tokspeed.hardware.spec import Hardware

MODELS = ["llama-3-8b", "llama-2-7b"]
QUANTS_BY_BITS = ["Q2_K", "Q3_K_M", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16", "F32"]
ENGINES = ["llama.cpp", "gpt-fast", "vllm", "transformers", "tensorrt-llm", "exllamav2", "mlx"]


def device(bw, tflops=200.0, kind="gpu", vendor="NVIDIA"):
    return Hardware(id="h", name="h", kind=kind, vendor=vendor, memory_gb=1000, bandwidth_gbps=bw, fp16_tflops=tflops)


common = dict(max_examples=40)      # derandomized, no deadline: the "ci" profile in conftest.py


def runnable(engine, hw, quant):
    """The drawn engine, or llama.cpp (which loads every quant drawn here) where the engine cannot run the
    combination (tokspeed.engines.compat refuses it; such combinations are not part of these laws)."""
    from tokspeed.engines.compat import check
    from tokspeed.errors import UserError

    try:
        check(engine, hw, quant)
    except UserError:
        return "llama.cpp"
    return engine


@settings(**common)
@given(st.sampled_from(MODELS), st.sampled_from(QUANTS_BY_BITS), st.floats(50, 8000), st.floats(1.01, 4),
       st.integers(0, 65536), st.sampled_from(ENGINES))
def test_more_bandwidth_never_slows_decode(model, quant, bw, factor, ctx, engine):
    engine = runnable(engine, device(bw), quant)
    a = tokspeed.predict(model, device(bw), quant=quant, engine=engine, prompt=0, gen=4, context=ctx)
    b = tokspeed.predict(model, device(bw * factor), quant=quant, engine=engine, prompt=0, gen=4, context=ctx)
    assert b.decode.tok_s >= a.decode.tok_s
    assert b.decode.bound_tok_s >= a.decode.bound_tok_s


@settings(**common)
@given(st.sampled_from(MODELS), st.sampled_from(QUANTS_BY_BITS), st.integers(0, 100000), st.integers(1, 50000),
       st.integers(1, 16), st.sampled_from(ENGINES))
def test_more_context_never_speeds_decode(model, quant, ctx, extra, batch, engine):
    hw = device(1000)
    engine = runnable(engine, hw, quant)
    a = tokspeed.predict(model, hw, quant=quant, engine=engine, prompt=0, gen=2, context=ctx, batch=batch)
    b = tokspeed.predict(model, hw, quant=quant, engine=engine, prompt=0, gen=2, context=ctx + extra, batch=batch)
    assert b.decode.tok_s <= a.decode.tok_s
    assert b.decode.bytes_per_token >= a.decode.bytes_per_token


@settings(**common)
@given(st.sampled_from(MODELS), st.integers(0, len(QUANTS_BY_BITS) - 2), st.integers(0, 32768))
def test_higher_bit_quant_never_reads_fewer_bytes(model, i, ctx):
    lo, hi = QUANTS_BY_BITS[i], QUANTS_BY_BITS[i + 1]
    a = tokspeed.predict(model, device(1000), quant=lo, engine="ideal", prompt=0, gen=1, context=ctx)
    b = tokspeed.predict(model, device(1000), quant=hi, engine="ideal", prompt=0, gen=1, context=ctx)
    assert b.decode.weight_bytes_per_token >= a.decode.weight_bytes_per_token
    assert b.memory.weights_bytes >= a.memory.weights_bytes


@settings(**common)
@given(st.sampled_from(MODELS), st.sampled_from(QUANTS_BY_BITS), st.sampled_from(ENGINES), st.floats(50, 8000),
       st.floats(1, 2000), st.integers(0, 4096), st.integers(0, 65536), st.integers(1, 64),
       st.sampled_from([("gpu", "NVIDIA"), ("soc", "Apple"), ("cpu", "AMD"), ("gpu", "AMD")]))
def test_expected_never_beats_the_ideal_bound(model, quant, engine, bw, tflops, prompt, ctx, batch, kv):
    hw = device(bw, tflops, *kv)
    engine = runnable(engine, hw, quant)
    p = tokspeed.predict(model, hw, quant=quant, engine=engine, prompt=prompt, gen=3, context=ctx, batch=batch)
    assert p.decode.tok_s <= p.decode.bound_tok_s * (1 + 1e-9)
    if prompt:
        assert p.prefill.tok_s <= p.prefill.bound_tok_s * (1 + 1e-9)
