"""llama.cpp's -fa on|off as an input (predict/explain ``flash_attention``, CLI ``--flash-attn``): which
engines and builds accept it, that it reaches the JSON and the levers, and that a front end's own default
gives way to it. The time it changes is checked by hand in test_unfused_attention.test_depth_cost_by_hand."""

import json
import subprocess
import sys

import pytest

from tokspeed.engines.profile import get_engine
from tokspeed.engines.tables import load_table
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware
from tokspeed.predict import predict

CLI = [sys.executable, "-m", "tokspeed"]


def test_the_json_says_whether_attention_ran_fused():
    # llama.cpp from 2025 (-fa auto) fused; ollama's default off; a 2023 build had no -fa; vLLM has no choice
    for engine, version, fa, expect in (("llama.cpp", None, None, True), ("ollama", None, None, False),
                                        ("llama.cpp", "b1500", None, False), ("llama.cpp", None, False, False),
                                        ("ollama", None, True, True), ("vllm", None, None, None)):
        p = predict("llama-3-8b", "rtx-4090", quant="Q4_K_M" if engine != "vllm" else "F16", engine=engine,
                    engine_version=version, flash_attention=fa, prompt=0, gen=8)
        assert p.to_dict()["flash_attention"] is expect, (engine, version, fa)


@pytest.mark.parametrize("version,ok", [("b2600", False), ("2024-03", False), ("2023", False),
                                        ("b2800", True), ("2024-04", True), ("2024", True), (None, True)])
def test_fa_on_needs_a_build_that_has_the_kernels(version, ok):
    # PR #5021 (ggml: add Flash Attention) merged 2024-04-30: b2600 is 2024-03 by eras.toml's anchors (b2500 in
    # 2024-03, b3000 in 2024-05), b2800 2024-04; an era label stands for its last month
    hw = get_hardware("rtx-4090")
    if ok:
        assert get_engine("llama.cpp", hw, version=version, flash_attention=True).flash_attention is True
    else:
        with pytest.raises(UserError, match="no FlashAttention"):
            get_engine("llama.cpp", hw, version=version, flash_attention=True)
    assert get_engine("llama.cpp", hw, version=version, flash_attention=False).flash_attention is False


def test_sycl_has_flash_attention_in_its_builds_from_2026_03():
    # ggml-sycl's fattn*.cpp: absent from llama-cpp-python 0.3.16's copy (2025-08), present in 0.3.17's (2026-03);
    # llama.cpp picks SYCL on an Intel GPU. Today's build: -fa auto runs them and -fa on is accepted; a build before
    # them runs attention unfused and refuses -fa on, naming the month
    hw = get_hardware("arc-a770")
    for engine in ("llama.cpp", "llama.cpp-sycl"):
        assert get_engine(engine, hw).flash_attention is True
        assert get_engine(engine, hw, flash_attention=True).flash_attention is True
        assert get_engine(engine, hw, version="2025-06").flash_attention is False
        with pytest.raises(UserError, match="2026-03"):
            get_engine(engine, hw, version="2025-06", flash_attention=True)
        assert get_engine(engine, hw, flash_attention=False).flash_attention is False
    # CUDA's kernels are the family's (2024-04)
    assert get_engine("llama.cpp", get_hardware("rtx-4090"), version="2025-06", flash_attention=True).flash_attention


def test_a_bad_version_or_value_says_so_first():
    hw = get_hardware("rtx-4090")
    with pytest.raises(UserError, match="predates"):
        get_engine("llama.cpp", hw, version="2022-06", flash_attention=True)
    with pytest.raises(UserError, match="True, False or None"):
        get_engine("llama.cpp", hw, flash_attention="off")


@pytest.mark.parametrize("engine", ["vllm", "ideal", "tensorrt-llm", "mlx"])
def test_engines_without_the_setting_refuse_it(engine):
    with pytest.raises(UserError, match="llama.cpp setting"):
        get_engine(engine, get_hardware("rtx-4090"), flash_attention=False)


def test_a_profile_passed_in_cannot_be_asked_for_it():
    with pytest.raises(UserError, match="engine profile"):
        get_engine(get_engine("llama.cpp-cuda"), flash_attention=True)


def test_a_front_end_asked_for_fa_is_its_backend_plus_its_own_cost():
    # ollama -fa on (OLLAMA_FLASH_ATTENTION=1) is llama.cpp's 2025 CUDA backend as it runs by default, plus
    # ollama's per-token cost (priors.toml extra_fixed_s), at any depth
    extra = load_table("priors.toml")["ollama"]["extra_fixed_s"]
    hw = get_hardware("rtx-4090")
    for ctx in (0, 16384):
        a = predict("llama-3-8b", hw, quant="Q4_K_M", prompt=0, gen=4, context=ctx).decode.ms_per_token
        b = predict("llama-3-8b", hw, quant="Q4_K_M", engine="ollama", flash_attention=True, prompt=0, gen=4,
                    context=ctx).decode.ms_per_token
        assert (b - a) / 1e3 == pytest.approx(extra, rel=1e-6)


def test_explain_keeps_the_setting_in_its_levers():
    from tokspeed.explain import explain

    hw = get_hardware("m2-ultra-76")
    e = explain("llama-3-8b", hw, quant="Q4_K_M", context=4096, flash_attention=False)
    assert e.prediction.flash_attention is False
    lever = next(lv for lv in e.levers if lv.lever == "context")      # to the seeds' 128K context
    longer = predict("llama-3-8b", hw, quant="Q4_K_M", prompt=0, gen=1, context=131072, flash_attention=False)
    fused = predict("llama-3-8b", hw, quant="Q4_K_M", prompt=0, gen=1, context=131072)
    assert lever.tok_s == pytest.approx(longer.decode.tok_s) and lever.tok_s < 0.8 * fused.decode.tok_s


def test_cli_flash_attn():
    base = CLI + ["predict", "llama-3-8b", "--hardware", "rtx-4090", "-q", "Q4_K_M", "--context", "8192", "--json"]
    runs = {fa: subprocess.run(base + ["--flash-attn", fa], capture_output=True, text=True) for fa in ("auto", "off")}
    for r in runs.values():
        assert r.returncode == 0, r.stderr
    auto, off = (json.loads(runs[k].stdout) for k in ("auto", "off"))
    assert auto["flash_attention"] is True and off["flash_attention"] is False
    assert off["decode"]["tok_s"] < auto["decode"]["tok_s"]
    for bad in (["-e", "vllm", "-fa", "off"], ["--engine-version", "2023-10", "-fa", "on"], ["-fa", "maybe"]):
        r = subprocess.run(base[:-1] + bad, capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "error" in r.stderr and not r.stdout, bad


@pytest.mark.parametrize("verb", [["sweep", "--context", "8192"], ["compare", "--context", "8192"]])
def test_sweep_and_compare_take_it_too(verb):
    args = CLI + [verb[0], "llama-3-8b", "--hardware", "rtx-4090", "-q", "Q4_K_M", *verb[1:], "--json"]
    rows = {fa: json.loads(subprocess.run(args + ["-fa", fa], capture_output=True, text=True, check=True).stdout)
            for fa in ("auto", "off")}
    want = {fa: predict("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192,
                        **({"prompt": 0, "gen": 1} if verb[0] == "sweep" else {}),
                        **({"flash_attention": False} if fa == "off" else {})) for fa in ("auto", "off")}
    for fa in rows:
        (row,) = rows[fa]
        assert row["flash_attention"] is want[fa].flash_attention
        assert row["decode"]["tok_s"] == pytest.approx(want[fa].decode.tok_s)


def test_plan_and_the_model_ranking_take_it_too():
    from tokspeed.advise.runs_here import rank_models
    from tokspeed.advise.plan import plan

    hw = get_hardware("rtx-4090")
    (opt,) = [o for o in plan("llama-3-8b", 10, quant="Q4_K_M", context=16384, hardware=[hw], flash_attention=False)
              if o.devices == 1]
    want = predict("llama-3-8b", hw, quant="Q4_K_M", prompt=0, gen=1, context=16384, flash_attention=False)
    assert opt.tok_s == pytest.approx(want.decode.tok_s)
    (row,) = rank_models(hw, models=["llama-3-8b"], context=16384, flash_attention=False)
    want = predict("llama-3-8b", hw, quant=row.quant, prompt=512, gen=1, context=16384, flash_attention=False)
    assert row.decode["tok_s"] == pytest.approx(want.decode.tok_s)
    with pytest.raises(UserError, match="llama.cpp setting"):         # one error, not every device left out
        plan("llama-3-8b", 10, engine="vllm", flash_attention=False)
    with pytest.raises(UserError, match="no FlashAttention"):
        rank_models(hw, models=["llama-3-8b"], engine_version="2023-06", flash_attention=True)
