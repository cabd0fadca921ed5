"""benchmarks/bench_aiconfigurator.py without AIConfigurator: one clear message on how to install it in its own venv,
exit 0, no results file; and its answer cache reads back what it wrote."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_aiconfigurator.py"


def _run(tmp_path, python: str):
    out = tmp_path / "results.md"
    env = {**os.environ, "AICONFIGURATOR_PYTHON": python, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True, env=env,
                       timeout=120)
    return r, out


def test_absent_interpreter_says_how_to_install_and_exits_0(tmp_path):
    r, out = _run(tmp_path, str(tmp_path / "no-such-venv" / "bin" / "python"))
    assert r.returncode == 0, r.stderr
    assert "AIConfigurator was not found" in r.stdout
    assert "no interpreter at" in r.stdout
    assert "python3 -m venv" in r.stdout and "pip install aiconfigurator" in r.stdout
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_interpreter_without_aiconfigurator_is_absent_too(tmp_path):
    # this interpreter runs but has no aiconfigurator package (it is never a tokspeed dependency)
    if importlib.util.find_spec("aiconfigurator") is not None:
        pytest.skip("this interpreter has aiconfigurator")
    r, out = _run(tmp_path, sys.executable)
    assert r.returncode == 0, r.stderr
    assert "cannot import aiconfigurator" in r.stdout
    assert not out.exists()


def _module():
    spec = importlib.util.spec_from_file_location("bench_aiconfigurator", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cache_reads_back_what_it_wrote(tmp_path):
    mod = _module()
    q1 = {"fn": "estimate", "kw": {"isl": 128, "model_path": "m"}}
    q2 = {"fn": "version"}
    cache = {mod._key(q1): {"tpot_ms": 7.5}, mod._key(q2): {"version": "0.12.0"}}
    path = tmp_path / "r.md"
    path.write_text("# results\n\n| a | b |\n\n" + mod.cache_text(cache), encoding="utf-8")
    assert mod.load_cache(path) == cache
    # the key does not depend on the order the question's fields were written in
    assert mod._key({"kw": {"model_path": "m", "isl": 128}, "fn": "estimate"}) in mod.load_cache(path)
    assert mod.load_cache(tmp_path / "missing.md") == {}


def _rows_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import aiconfigurator_rows
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return aiconfigurator_rows


def _case(**over):
    from tokspeed.serving.rows import Case

    base = dict(id="s-x", source="src", model="llama-3.1-70b", hardware="h200-sxm", engine="tensorrt-llm",
                quant="FP8", kv_dtype="fp8", tp=4, replicas=2, dp_attn=False, gpus=8, scenario="offline", isl=1000,
                osl=500, length_ratio=1.0, concurrency=0, rate_rps=0.0, static=False, tok_s_per_gpu=100.0,
                tpot_ms=None, ttft_ms=None)
    return Case(**{**base, **over})


def test_offline_row_asks_max_throughput_at_the_engines_limits():
    rows = _rows_module()
    q, why = rows.question(_case())
    assert why == ""
    assert q["fn"] == "max_throughput"
    # TensorRT-LLM: max_batch_size 2048, max_num_tokens 8192 -> budgets ISL and 8 prompts of 1000 = 8000
    assert q["max_bs"] == 2048 and q["ctx_options"] == [1000, 8000]
    kw = q["kw"]
    assert (kw["system_name"], kw["backend_name"], kw["tp_size"]) == ("h200_sxm", "trtllm", 4)
    assert (kw["gemm_quant_mode"], kw["kvcache_quant_mode"]) == ("fp8", "fp8")
    assert "moe_quant_mode" not in kw and "moe_tp_size" not in kw      # a dense model


def test_random_lengths_take_their_mean_and_moe_tp_rows_split_experts():
    rows = _rows_module()
    q, _ = rows.question(_case(model="mixtral-8x7b", quant="F16", kv_dtype="f16", tp=2, replicas=4,
                               scenario="concurrency", concurrency=64, length_ratio=0.8))
    kw = q["kw"]
    assert (kw["isl"], kw["osl"]) == (900, 450)          # uniform in [0.8, 1] x 1000/500: mean 0.9 x
    assert kw["batch_size"] == 16                        # 64 in flight over 4 replicas
    assert (kw["moe_tp_size"], kw["moe_ep_size"]) == (2, 1)
    assert (kw["gemm_quant_mode"], kw["moe_quant_mode"], kw["kvcache_quant_mode"]) == ("bfloat16",) * 3


def test_attention_dp_rate_row_and_littles_law():
    rows = _rows_module()
    c = _case(model="deepseek-v3", engine="sglang", tp=1, replicas=1, dp_attn=True, scenario="rate", rate_rps=2.0)
    q, _ = rows.question(c)
    kw = q["kw"]
    assert q["fn"] == "rate" and q["rate_rps"] == 2.0 and q["replicas"] == 1
    assert (kw["tp_size"], kw["attention_dp_size"], kw["moe_ep_size"]) == (1, 8, 8)
    assert "gemm_quant_mode" not in kw                   # DeepSeek's checkpoint is FP8 already
    answer = {"tok_s_per_gpu": 999.0, "tpot_ms": 20.0, "ttft_ms": 300.0, "meets_rate": True}
    # a steady state delivers the offered load: 2 requests/s x 500 tokens / 8 GPUs
    assert rows.aic_prediction(c, q, answer)["tok_s_per_gpu"] == 125.0
    assert rows.aic_prediction(c, q, {**answer, "meets_rate": False})["tok_s_per_gpu"] == 999.0
    assert rows.aic_prediction(c, q, {"error": "x"}) is None


def test_rows_without_aiconfigurator_data_say_why():
    rows = _rows_module()
    q, why = rows.question(_case(hardware="gh200-96g"))
    assert q is None and "gh200-96g" in why
    q, why = rows.question(_case(model="llama-2-7b"))
    assert q is None and why


def test_error_quantiles_by_hand():
    rows = _rows_module()
    assert rows.err(0.0, 50.0) == -1.0                   # nothing served is -100 %, not "no answer"
    assert rows.err(60.0, None) is None
    med, p90 = rows.quantiles([0.1, -0.2, 0.3])
    assert abs(med - 20.0) < 1e-9 and abs(p90 - 30.0) < 1e-9
