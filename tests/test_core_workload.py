"""The run (Workload), the closed-form decode average, the trained window, and the new JSON keys."""

import sys

import pytest

import tokspeed
from tokspeed.errors import UserError
from tokspeed.ledger import forward_ops
from tokspeed.models.catalog import get_model
from tokspeed.quant.schemes import scheme_for
from tokspeed.timing import RooflineTimer, depth_sum
from tokspeed.workload import MAX_PREFILL_PASSES, UBATCH, Workload, prefill_pass_count

PRED = sys.modules["tokspeed.predict"]     # the package attribute ``tokspeed.predict`` is the function


@pytest.mark.parametrize("kw, word", [({"batch": 0}, "batch"), ({"prompt": -1}, "prompt"),
                                      ({"gen": 1.5}, "gen"), ({"context": True}, "context")])
def test_workload_validates_once_in_library_words(kw, word):
    with pytest.raises(UserError) as e:
        tokspeed.predict("llama-3-8b", "rtx-4090", **kw)
    assert str(e.value).startswith(f"{word} must be an integer") and "--" not in str(e.value)


def test_prefill_chunks_cover_the_prompt_in_micro_batches():
    w = Workload(prompt=2 * UBATCH + 7, gen=0, context=100)
    chunks = list(w.prefill_chunks())
    assert chunks == [(100, UBATCH), (100 + UBATCH, UBATCH), (100 + 2 * UBATCH, 7)]


@pytest.mark.parametrize("prompt, ubatch, n_batch, passes", [
    (5000, 512, 2048, 4 + 4 + 2),       # calls 2048 / 2048 / 904: 4 + 4 + ceil(904 / 512)
    (5000, 4096, 2048, 3),              # -ub clamped to -b: 2048 / 2048 / 904
    (0, 512, 2048, 0),
])
def test_prefill_pass_count_counts_without_walking(prompt, ubatch, n_batch, passes):
    w = Workload(prompt=prompt, gen=0, ubatch=ubatch, n_batch=n_batch)
    assert prefill_pass_count(prompt, ubatch, n_batch) == passes == len(list(w.prefill_chunks()))


def test_a_prompt_of_too_many_micro_batches_is_one_line_before_any_work():
    # a llama-bench file's n_prompt 10,000,000 at n_ubatch 1 (measure --from) would walk ten million ledgers
    with pytest.raises(UserError) as e:
        tokspeed.predict("llama-3-8b", "rtx-4090", prompt=10_000_000, ubatch=1)
    assert "10,000,000 micro-batches" in str(e.value) and f"{MAX_PREFILL_PASSES:,}" in str(e.value)
    Workload(prompt=MAX_PREFILL_PASSES, gen=0, ubatch=1)             # exactly the cap: accepted
    Workload(prompt=10_000_000, gen=0)                               # the longest windows at -ub 512: accepted


@pytest.mark.parametrize("model, engine, gen, context", [
    ("llama-3-8b", "llama.cpp", 200, 0),            # memory bound throughout: affine
    ("gemma-2-9b", "llama.cpp", 300, 3400),          # depths 3912..4211 cross the 4096-token window
    ("llama-3-8b", "vllm", 77, 100),
])
def test_closed_form_decode_equals_the_step_by_step_sum(model, engine, gen, context):
    """The decode average is the mean of every step's time: here summed step by step, one pass per token."""
    spec = get_model(model)
    st = scheme_for("F16", spec)
    from tokspeed.engines.profile import attention_spec, get_engine
    from tokspeed.hardware.catalog import get_hardware

    from tokspeed.engines.compat import runnable

    hw = get_hardware("rtx-4090")
    prof = get_engine(engine, hw)
    spec = attention_spec(prof, spec)
    prof, hw = runnable(prof, hw, "F16", spec=spec)      # the engine's kernel count for this model (graph_kernels)
    timer = RooflineTimer(hw, "F16")
    first = context + 512
    brute = sum(timer(forward_ops(spec, st, 2.0, 1, 1, first + i), prof, 1, 1).seconds for i in range(gen))
    calls = []

    def step(d):
        calls.append(d)
        return timer(forward_ops(spec, st, 2.0, 1, 1, d), prof, 1, 1).seconds

    from tokspeed.attended import depth_kinks

    assert depth_sum(step, first, gen, depth_kinks(spec)) == pytest.approx(brute, rel=1e-12)
    assert len(calls) < 20          # not one pass per token
    p = tokspeed.predict(model, "rtx-4090", engine=engine, gen=gen, context=context, quant="F16")
    from tokspeed.serving.fitted import predict_constants

    fit = predict_constants(prof.name, hw.vendor) or {"gpu_scale": 1.0, "step_s": 0.0}   # a server engine's
    want = fit["gpu_scale"] * brute / gen + fit["step_s"]                              # serving constants
    assert p.decode.ms_per_token == pytest.approx(want * 1e3, rel=1e-12)


def test_depth_sum_finds_a_change_of_bound_inside_the_range():
    # max(affine, affine) with the kink at 37.5: exact sum by hand
    f = lambda d: max(1.0 + 0.5 * d, 10.0 + 0.26 * d)  # noqa: E731
    assert depth_sum(f, 0, 100) == pytest.approx(sum(f(i) for i in range(100)), rel=1e-12)


def test_largest_context_never_exceeds_the_trained_window():
    p = tokspeed.predict("llama-2-7b", "h100-sxm", quant="Q4_K_M")
    assert get_model("llama-2-7b").max_context == 4096
    assert p.memory.max_context == 4096            # 175,491 tokens of KV would fit; the model knows 4,096


def test_context_past_the_trained_window_is_flagged():
    ok = tokspeed.predict("llama-2-7b", "h100-sxm", context=1000)
    assert ok.warnings == [] and "warnings" not in ok.to_dict()
    long = tokspeed.predict("llama-2-7b", "h100-sxm", context=8000).to_dict()
    assert "4,096" in long["warnings"][0]


def test_json_has_engine_version_and_hypothetical():
    small = tokspeed.predict("llama-3-8b", "rtx-4090", quant="Q4_K_M").to_dict()
    assert small["hypothetical"] is False and "engine_version" in small
    big = tokspeed.predict("llama-3-70b", "rtx-4090").to_dict()    # 140 GB of F16 weights in 24 GB
    assert big["memory"]["fits"] is False and big["hypothetical"] is True
    assert big["decode"]["tok_s"] > 0                              # still gets numbers


def test_sweep_equals_one_prediction_per_configuration():
    grid = PRED.sweep("llama-3-8b", "rtx-4090", [1024, 65536], [1, 4], ["F16", "Q4_K_M"])
    assert len(grid) == 8
    one = tokspeed.predict("llama-3-8b", "rtx-4090", quant="Q4_K_M", prompt=0, gen=1, context=65536, batch=4)
    assert grid[-1].to_dict() == one.to_dict()


@pytest.mark.parametrize("model, batch, free", [("llama-3-8b", 1, 3e9), ("llama-3-8b", 8, 7.7e9),
                                                ("gemma-2-9b", 2, 1.234e9), ("gemma-2-9b", 1, 9e9),
                                                ("deepseek-v3", 3, 2.5e9)])
def test_largest_context_is_the_largest_that_fits(model, batch, free):
    from tokspeed.memory import _max_context, kv_bytes

    spec = get_model(model)
    t = _max_context(spec, 2.0, batch, free, spec.max_context)
    assert 0 < t <= spec.max_context
    assert kv_bytes(spec, 2.0, batch, t) <= free
    assert t == spec.max_context or kv_bytes(spec, 2.0, batch, t + 1) > free


def test_engine_version_reaches_the_engine_and_the_json(monkeypatch):
    from tokspeed.engines.profile import get_engine

    seen = []

    def spy(engine, hardware=None, version=None, flash_attention=None):
        seen.append((version, flash_attention))
        return get_engine(engine, hardware, version=version, flash_attention=flash_attention)

    monkeypatch.setattr(sys.modules["tokspeed.prediction_setup"], "get_engine", spy)    # predict's first step
    p = tokspeed.predict("llama-3-8b", "rtx-4090", engine_version="b6000")
    assert seen == [("b6000", None)]
    tokspeed.predict("llama-3-8b", "rtx-4090", engine_version="b6001", flash_attention=False)
    assert seen[-1] == ("b6001", False)
    assert p.to_dict()["engine_version"] == getattr(p.engine_profile, "version", None)   # the profile's era


def test_cli_says_the_window_warning_on_stderr():
    """Llama 2 7B was trained on 4,096 tokens: context 8,192 + prompt 512 + gen 128 = 8,832 is past it.
    The numbers still come (stdout, strict JSON) and the warning is one line on stderr."""
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "tokspeed", "predict", "llama-2-7b", "--hardware", "rtx-4090",
                        "--context", "8192", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["warnings"]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokspeed: warning:") and "4,096" in lines[0] and "8,832" in lines[0]
