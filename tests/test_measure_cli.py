"""`tokspeed measure` end to end on a tiny random model: numbers counted as documented, the memory
guard, calibration stored in the profile, one-line errors."""

import json

import pytest

from tests.conftest import run_cli

pytest.importorskip("torch")

TINY = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512}


@pytest.fixture
def env(tmp_path, monkeypatch):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text(json.dumps(TINY))
    prof = tmp_path / "local.toml"
    prof.write_text('name = "Test CPU"\nkind = "cpu"\nvendor = "AMD"\nmemory_gb = 24.0\nbandwidth_gbps = 40.0\n'
                    'fp16_tflops = 0.8\nfp32_tflops = 0.2\n\n[measured]\ncpu_read_gbps = 40.0\n')
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(prof))
    return tmp_path


def test_measure_json_counts_bytes_by_hand(env):
    r = run_cli("measure", env / "tiny", "--context", "0,32", "--batch", "1,2", "--prompt", "8", "--gen", "6",
                "-o", env / "run.json", "--json")
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    assert json.loads((env / "run.json").read_text()) == run
    assert [(p["batch"], p["context"]) for p in run["points"]] == [(1, 0), (1, 32), (2, 0), (2, 32)]
    # weights per step, fp32: per layer q 64x64 + k,v 2x32x64 + o 64x64 + gate/up/down 3x128x64 + 2 norms x 64;
    # plus one embedding row (64), the final norm (64) and the LM head (256 x 64)
    layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64 + 2 * 64
    weights = 4 * (2 * layer + 64 + 64 + 256 * 64)
    p = run["points"][1]
    assert p["weight_bytes_per_token"] == weights
    # KV at depths 32..37 (6 steps), each reading depth + 1 positions: K and V, 2 layers, 32 values, fp32
    kv = sum(2 * 2 * 32 * (32 + i + 1) * 4 for i in range(6)) / 6
    assert p["kv_bytes_per_token"] == pytest.approx(kv)
    assert p["mbu"] == pytest.approx((weights + kv) * p["decode_tok_s"] / 40e9)
    assert set(p["stages_ms"]) == {"embedding", "attention", "ffn", "lm_head", "sampling"}
    assert p["predicted"]["engine"] == "gpt-fast" and 0 < p["predicted"]["tok_s"] < p["predicted"]["bound_tok_s"]
    assert p["error_pct"] == pytest.approx((p["predicted"]["tok_s"] / p["decode_tok_s"] - 1) * 100)
    b2 = run["points"][3]   # batch 2: KV of both sequences per step, weights once
    assert b2["bytes_per_step"] == pytest.approx(weights + 2 * kv)
    assert "KV cache" in run["counted"]


def test_calibrate_stores_fit_in_profile(env):
    import tomllib

    r = run_cli("measure", env / "tiny", "--context", "0,64,128", "--prompt", "0", "--gen", "5", "--calibrate", "--json")
    assert r.returncode == 0, r.stderr
    cal = tomllib.loads((env / "local.toml").read_text())["calibration"]["torch"]
    assert cal["n_points"] == 3 and cal["eta_memory"] > 0 and cal["overhead_s"] >= 0
    assert json.loads(r.stdout)["calibration"]["eta_memory"] == pytest.approx(cal["eta_memory"], rel=1e-5)


def test_memory_guard_refuses_a_shape_that_does_not_fit(env):
    huge = dict(TINY, num_hidden_layers=400, hidden_size=16384, num_attention_heads=128, intermediate_size=53248)
    (env / "huge").mkdir()
    (env / "huge" / "config.json").write_text(json.dumps(huge))
    r = run_cli("measure", env / "huge", "--context", "0", "--gen", "5")
    assert r.returncode == 2
    assert "free" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args,msg", [
    (["--gen", "2"], "at least 5"), (["--context", "a,b"], "--context"),
    (["--quant", "Q4_K_M"], "llama.cpp"), (["--hardware", "nope-gpu-9"], "hardware"),
    (["--backend", "llama.cpp"], ".gguf"), (["--threads", "-1"], "--threads"),
    (["--flash-attn", "on"], "--backend llama.cpp"), (["--flash-attn", "yes"], "--flash-attn"),
])
def test_bad_input_is_one_line(env, args, msg):
    r = run_cli("measure", env / "tiny", "--context", "0", *args)
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cuda_without_a_gpu_is_one_line(env):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    r = run_cli("measure", env / "tiny", "--context", "0", "--device", "cuda")
    assert r.returncode == 2 and "CUDA" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_missing_local_profile_says_run_probe(env, monkeypatch):
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(env / "none.toml"))
    r = run_cli("measure", env / "tiny", "--context", "0")
    assert r.returncode == 2 and "tokspeed probe" in r.stderr


def test_text_needs_a_tokenizer(env):
    r = run_cli("measure", env / "tiny", "--text", "서울 맛집 추천해줘")
    assert r.returncode == 2 and "tokenizer" in r.stderr


def test_plot_draws_measured_beside_predicted(env):
    out = env / "run.svg"
    r = run_cli("measure", env / "tiny", "--context", "0,32", "--prompt", "8", "--gen", "5", "--plot", out, "--json")
    assert r.returncode == 0, r.stderr
    svg = out.read_text()
    assert svg.startswith("<?xml") and "<svg" in svg
    run = json.loads(r.stdout)
    # one measured ÷ predicted label per point, as the run reports it
    for p in run["points"]:
        assert f"{p['decode_tok_s'] / p['predicted']['tok_s']:.2f}×" in svg


def test_every_argument_is_checked_before_torch_or_a_model_loads():
    """issue 29: `measure --gen 4` was refused only after 12.7 s of loading; now at once, torch never imported."""
    import subprocess
    import sys
    import time

    code = ("import sys\nfrom tokspeed.cli.main import main\n"
            "rc = main(sys.argv[1:])\n"
            "print('torch' in sys.modules, rc)")
    for argv, says in ((["measure", "qwen2.5-0.5b", "--gen", "4"], "--gen must be at least 5"),
                       (["measure", "qwen2.5-0.5b", "--context", "0", "--quant", "Q4_K_M"], "torch backend runs"),
                       (["measure", "qwen2.5-0.5b", "--hardware", "no-such-device"], "unknown hardware"),
                       (["probe", "--quick", "--repeats", "2"], "--repeats must be at least 3")):
        t = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
        assert says in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert r.stdout.strip() == "False 2", r.stdout        # refused (exit 2), torch never imported
        assert time.monotonic() - t < 10
