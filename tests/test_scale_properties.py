"""Properties of the scale model (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from scale_models import LLAMA3_70B, LLAMA3_8B, MIXTRAL
from tokspeed.models.spec import ModelSpec
from tokspeed.predict import predict
from tokspeed.engines.rates import MATVEC_MAX_TOKENS
from tokspeed.workload import UBATCH

SETTINGS = settings(max_examples=25)      # derandomized, no deadline: the "ci" profile in conftest.py

specs = st.builds(
    lambda L, d_heads, kv_div, ff, vocab: ModelSpec(id="synthetic", n_layers=L, d_model=64 * d_heads,
                                                    n_heads=d_heads, n_kv_heads=d_heads // kv_div,
                                                    d_ff=ff * 256, vocab_size=vocab),
    st.integers(2, 48), st.sampled_from([8, 16, 32, 64]), st.sampled_from([1, 2, 4, 8]), st.integers(4, 64),
    st.integers(1000, 150_000))
known = st.sampled_from([LLAMA3_8B, LLAMA3_70B, MIXTRAL])
gpus = st.sampled_from(["rtx-4090", "h100-sxm", "a100-80g-pcie", "mi300x"])
engines = st.sampled_from(["ideal", "llama.cpp", "vllm"])


def runnable_quant(engine, quant):
    """vLLM loads no GGUF k-quants (tokspeed.engines.compat refuses them): its 4-bit is AWQ."""
    return "AWQ-4B" if engine == "vllm" and quant.startswith("Q") else quant


def available(p) -> float:
    """Memory left for the KV cache over all devices: capacity - weights - activations - runtime."""
    return sum((d["capacity_bytes"] - d["weights_bytes"] - d["activations_bytes"] - d["overhead_bytes"]) * d["count"]
               for d in p.extra["devices"]["per_device"])


@SETTINGS
@given(spec=st.one_of(specs, known), hw=gpus, n=st.integers(1, 7), style=st.sampled_from(["split", "pp"]),
       context=st.integers(0, 32768))
def test_adding_a_gpu_never_reduces_memory_available(spec, hw, n, style, context):
    kw = dict(quant="Q4_K_M", engine="llama.cpp", prompt=0, gen=1, context=context)
    n = min(n, spec.n_layers - 1)
    a = predict(spec, hw, gpus=n, parallel=style if n > 1 else None, **kw)
    b = predict(spec, hw, gpus=n + 1, parallel=style, **kw)
    assert available(b) >= available(a)
    assert b.memory.capacity_bytes > a.memory.capacity_bytes


@SETTINGS
@given(spec=st.one_of(specs, known), hw=gpus, n=st.integers(2, 8), style=st.sampled_from(["split", "pp"]),
       engine=engines, context=st.integers(0, 16384), quant=st.sampled_from(["F16", "Q4_K_M", "Q8_0"]))
def test_pipeline_parallel_never_lowers_single_sequence_latency(spec, hw, n, style, engine, context, quant):
    n = min(n, spec.n_layers)
    kw = dict(quant=runnable_quant(engine, quant), engine=engine, prompt=0, gen=1, context=context)
    one = predict(spec, hw, **kw)         # the same device with room for everything
    pipe = predict(spec, hw, gpus=n, parallel=style, **kw)
    assert pipe.decode.ms_per_token >= one.decode.ms_per_token * (1 - 1e-9)
    assert pipe.decode.bound_tok_s <= one.decode.bound_tok_s * (1 + 1e-9)


@SETTINGS
@given(spec=st.one_of(specs, known), hw=gpus, setup=st.sampled_from([{}, {"gpus": 2, "parallel": "tp"},
                                                                    {"gpus": 4, "parallel": "pp"},
                                                                    {"gpus": 2, "parallel": "split"}]),
       engine=engines, context=st.integers(0, 8192), b1=st.integers(1, 512), b2=st.integers(1, 512))
def test_aggregate_throughput_never_falls_as_batch_grows_until_memory_runs_out(spec, hw, setup, engine, context,
                                                                                 b1, b2):
    lo, hi = sorted((b1, b2))
    if spec.n_experts:
        # routed experts' tiles (engines/expert_tiles.py) make a sawtooth, as the kernels do: one sequence more can
        # add a tile to an expert (Mixtral on two RTX 4090s, batch 104 -> 105: 1,372 -> 1,343 tok/s); doubling the
        # batch at most doubles every expert's tiles (ceil((n1 + n2) / J) <= ceil(n1 / J) + ceil(n2 / J)), so
        # throughput never falls from a batch to twice it or more
        hi = max(hi, 2 * lo)
    # ... within one micro-batch (past 512 sequences a step runs two, each reading the weights) and one kernel
    # regime: a pass of up to MATVEC_MAX_TOKENS tokens runs the matrix-vector kernels, one more the tiled ones
    # (ggml-cuda MMVQ -> MMQ), whose small tiles can be slower where memory is fast (Llama 3 8B Q4_K_M on an H100,
    # batch 8 -> 9: 1,602 -> 1,286 tok/s); a pipeline's pass holds batch / stages of them
    stages = setup.get("gpus", 1) if setup.get("parallel") == "pp" else 1
    if hi > UBATCH or (-(-lo // stages) <= MATVEC_MAX_TOKENS) != (-(-hi // stages) <= MATVEC_MAX_TOKENS):
        return
    if (setup.get("parallel") == "tp" and spec.n_heads % 2) or setup.get("gpus", 1) > spec.n_layers:
        return
    kw = dict(quant=runnable_quant(engine, "Q4_K_M"), engine=engine, prompt=0, gen=1, context=context, **setup)
    small = predict(spec, hw, batch=lo, **kw)
    big = predict(spec, hw, batch=hi, **kw)
    if not big.memory.fits:
        return
    assert big.decode.aggregate_tok_s >= small.decode.aggregate_tok_s * (1 - 1e-9)
