"""The four levers, checked against the seeds' numbers and hand arithmetic."""

import json
import subprocess
import sys

import pytest

from tokspeed.explain import explain
from tokspeed.hardware.catalog import hardware_from_flags

KV_PER_TOKEN_GQA = 2 * 32 * 8 * 128 * 2      # 128 KiB
KV_PER_TOKEN_MHA = 2 * 32 * 32 * 128 * 2     # 512 KiB (the seeds)


def levers(**kw):
    hw = hardware_from_flags("1000GB/s", "80GB", fp16_tflops=1000)
    e = explain("llama-3-8b", hw, engine="ideal", **kw)
    return e, {lv.lever: lv for lv in e.levers}


def test_four_levers_present():
    _, lv = levers(context=1024)
    assert set(lv) == {"parameters", "quant", "attention", "context"}


def test_quant_lever_q4_is_about_3_5x():
    _, lv = levers(context=1024)
    assert "Q4_K_M" in lv["quant"].what_if
    assert 3.0 < lv["quant"].speedup < 3.6            # seeds: Q4 ≈ 4.5 GB → ≈ 3.5× FP16


def test_mha_lever_adds_kv_and_kv_projection_bytes():
    e, lv = levers(context=8192)
    extra = lv["attention"].bytes_per_token - e.prediction.decode.bytes_per_token
    kv_weights = 32 * 2 * (4096 - 1024) * 4096 * 2          # K and V projections grow 4×
    kv_cache = (8192 + 2) * (KV_PER_TOKEN_MHA - KV_PER_TOKEN_GQA)
    assert extra == pytest.approx(kv_weights + kv_cache, rel=1e-3)
    assert lv["attention"].speedup < 1


def test_context_lever_128k_about_halves_speed():
    e, lv = levers(context=1024)
    assert "131,072" in lv["context"].what_if
    weights = e.prediction.decode.weight_bytes_per_token
    kv = 131072 * KV_PER_TOKEN_GQA
    assert kv == pytest.approx(weights, rel=0.2)             # seeds: at 128K, KV ≈ weights
    assert lv["context"].speedup == pytest.approx(e.prediction.decode.bytes_per_token / (weights + kv), rel=0.02)


def test_parameters_lever_half_layers():
    _, lv = levers(context=0)
    # half the layers: every per-layer byte halves, embedding row and LM head stay (1.05 GB of 15.1 GB)
    assert 1.8 < lv["parameters"].speedup < 2.0


def test_cli_explain_json_and_tables():
    r = subprocess.run([sys.executable, "-m", "tokspeed", "explain", "llama-3-8b", "--hardware", "rtx-4090",
                        "--context", "1024", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert sum(s["seconds"] for s in d["stages"]) == pytest.approx(d["prediction"]["decode"]["ms_per_token"] / 1e3)
    assert len(d["levers"]) == 4
    r = subprocess.run([sys.executable, "-m", "tokspeed", "explain", "llama-3-8b", "--hw", "rtx-4090", "--prefill",
                        "1024"], capture_output=True, text=True)
    assert r.returncode == 0 and "prefill of 1,024 tokens" in r.stdout and "compute" in r.stdout


@pytest.mark.parametrize("args", [["--plot", "x.pdf"], ["--measured", "/no/such.json"], ["--hardware", "nope"]])
def test_cli_explain_bad_input_one_line(args, tmp_path):
    base = ["explain", "llama-3-8b"] + ([] if "--hardware" in args else ["--hardware", "rtx-4090"])
    r = subprocess.run([sys.executable, "-m", "tokspeed", *base, *args], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("engine,quant,four", [("llama.cpp", "F16", "Q4_K_M"), ("vllm", "BF16", "AWQ-4B")])
def test_quant_lever_uses_a_4bit_format_the_engine_runs(engine, quant, four):
    """vLLM loads no GGUF: its "Q4" lever is AWQ (the capability table), and the lever's prediction runs."""
    ex = explain("llama-3-8b", "h100-sxm", quant=quant, engine=engine)
    lever = next(lv for lv in ex.levers if lv.lever == "quant")
    assert lever.what_if == f"{quant} → {four}" and lever.speedup > 1     # fewer bytes per token: faster
