"""The predict/sweep/compare CLI: the JSON contract and every user-input error path."""

import json

import pytest

from conftest import run_cli

CONTRACT = {
    "memory": {"weights_bytes", "kv_bytes", "activations_bytes", "overhead_bytes", "total_bytes", "capacity_bytes", "fits"},
    "decode": {"bytes_per_token", "weight_bytes_per_token", "kv_bytes_per_token", "bound_tok_s", "tok_s",
               "ms_per_token", "bound"},
    "prefill": {"tok_s", "seconds", "bound"},
}


def test_predict_json_has_the_contract_keys():
    r = run_cli("predict", "llama-3-8b", "--hardware", "RTX-4090", "--quant", "q4_k_m", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in ("model", "hardware", "quant", "engine", "batch", "ttft_s"):
        assert key in doc
    for section, keys in CONTRACT.items():
        assert keys <= set(doc[section]), section
    assert doc["quant"] == "Q4_K_M" and doc["engine"] == "llama.cpp-cuda"
    d = doc["decode"]
    assert d["ms_per_token"] == pytest.approx(1000 / d["tok_s"])
    assert d["bytes_per_token"] >= d["weight_bytes_per_token"] + d["kv_bytes_per_token"]


def test_python_api_equals_cli_json():
    import tokspeed

    r = run_cli("predict", "llama-2-7b", "--hardware", "h100-sxm", "--quant", "Q8_0", "--context", "2048",
                "--batch", "4", "--json")
    api = tokspeed.predict("llama-2-7b", "h100-sxm", quant="Q8_0", context=2048, batch=4).to_dict()
    assert json.loads(r.stdout) == json.loads(json.dumps(api))


def test_sweep_reproduces_the_seeds_context_table():
    r = run_cli("sweep", "llama-3-8b", "--hardware", "rtx-4090", "--engine", "ideal", "--context", "1K,128K", "--json")
    rows = json.loads(r.stdout)
    assert [row["context"] for row in rows] == [1024, 131072]
    assert rows[1]["decode"]["bound_tok_s"] / rows[0]["decode"]["bound_tok_s"] < 0.52


def test_compare_lists_every_pair():
    r = run_cli("compare", "llama-3-8b", "--hardware", "rtx-4090,h100-sxm", "--quant", "F16,Q4_K_M", "--json")
    assert r.returncode == 0, r.stderr
    assert [(x["hardware"], x["quant"]) for x in json.loads(r.stdout)] == [
        ("rtx-4090", "F16"), ("rtx-4090", "Q4_K_M"), ("h100-sxm", "F16"), ("h100-sxm", "Q4_K_M")]


@pytest.mark.parametrize("args", [
    ("predict", "no-such-model", "--hardware", "rtx-4090"),
    ("predict", "llama-3-8b", "--hardware", "no-such-gpu"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--quant", "Q9_X"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--kv-dtype", "q3"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--engine", "warp-drive"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--batch", "0"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--context", "-5"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--gen", "many"),
    ("predict", "llama-3-8b"),
    ("predict", "llama-3-8b", "--hardware", "rtx-4090", "--quant", "EXL2-12"),
    ("predict", "/no/such/config.json", "--hardware", "rtx-4090"),
    ("predict", "llama-3-8b", "--hardware", "/no/such/gpu.toml"),
    ("sweep", "llama-3-8b", "--hardware", "rtx-4090", "--context", "1K,abc"),
    ("compare", "llama-3-8b", "--hardware", "rtx-4090,nope"),
])
def test_user_errors_are_one_line_exit_2(args):
    r = run_cli(*args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stdout == ""


def test_bad_files_are_one_line(tmp_path):
    bad_json = tmp_path / "config.json"
    bad_json.write_text("{not json")
    bad_toml = tmp_path / "gpu.toml"
    bad_toml.write_text("name = 'x'\nkind = 'gpu'\n")   # missing fields
    neg = tmp_path / "neg.toml"
    neg.write_text("name='x'\nkind='gpu'\nvendor='v'\nmemory_gb=24\nbandwidth_gbps=-1\n")
    for args in (("predict", bad_json, "--hardware", "rtx-4090"), ("predict", "llama-3-8b", "--hardware", bad_toml),
                 ("predict", "llama-3-8b", "--hardware", neg)):
        r = run_cli(*args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


def test_custom_hardware_toml(tmp_path):
    f = tmp_path / "mybox.toml"
    f.write_text('name = "My box"\nkind = "gpu"\nvendor = "Acme"\nmemory_gb = 48\nbandwidth_gbps = 2000\n')
    r = run_cli("predict", "llama-3-8b", "--hardware", f, "--engine", "ideal", "--json", "--prompt", "0", "--gen", "1")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["decode"]["bound_tok_s"] == pytest.approx(2000e9 / doc["decode"]["bytes_per_token"], rel=1e-6)


def test_predict_never_imports_heavy_libraries():
    import subprocess
    import sys

    # cold-start time is a benchmark (benchmarks/bench_predict.py), not a threshold on a shared test box
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "tokspeed", "predict", "llama-3-8b", "--hardware",
                        "rtx-4090", "--json"], capture_output=True, text=True)
    for heavy in ("torch", "numpy", "matplotlib", "httpx", "gguf"):
        assert f" {heavy}\n" not in r.stderr and f"| {heavy}\n" not in r.stderr, heavy


def test_prefill_is_unknown_without_a_flops_figure(tmp_path):
    f = tmp_path / "noflops.toml"
    f.write_text('name = "No FLOPS"\nkind = "soc"\nvendor = "Acme"\nmemory_gb = 64\nbandwidth_gbps = 400\n')
    doc = json.loads(run_cli("predict", "llama-3-8b", "--hardware", f, "--json").stdout)
    assert doc["prefill"]["tok_s"] is None and doc["ttft_s"] is None
    assert doc["decode"]["tok_s"] > 0       # decode is memory bound: still predicted


def test_llama_cpp_refuses_a_tpu():
    r = run_cli("predict", "llama-3-8b", "--hardware", "tpu-v5e")
    assert r.returncode == 2 and "vllm" in r.stderr
    assert run_cli("predict", "llama-3-8b", "--hardware", "tpu-v5e", "--engine", "vllm").returncode == 0


def test_sweep_refuses_batch_zero():
    r = run_cli("sweep", "llama-3-8b", "--hardware", "rtx-4090", "--batch", "1,0", "--json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "batch" in r.stderr
