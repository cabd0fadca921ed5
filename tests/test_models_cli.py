"""`tokspeed models [FILTER] [--json]` run as a user would."""

import json
import os
import subprocess
import sys


def run_cli(*args):
    # a wide terminal: the features column holds several markers (MoE 8/256+1s, MLA)
    return subprocess.run([sys.executable, "-m", "tokspeed", "models", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "220"})


def test_llama_json():
    r = run_cli("llama", "--json")
    assert r.returncode == 0, r.stderr
    rows = {d["id"]: d for d in json.loads(r.stdout)}
    assert {"llama-1-7b", "llama-2-70b", "llama-3-8b", "llama-3.1-405b", "codellama-34b"} <= set(rows)
    assert not any(i.startswith("qwen") for i in rows)
    l3 = rows["llama-3-8b"]
    # hand sum: 2 x embedding 128256x4096 + 32 x (attention + MLP + 2 norms) + final norm
    per_layer = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096
    assert l3["n_params"] == 2 * 128256 * 4096 + 32 * per_layer + 4096
    assert l3["kv_elements_per_token_layer"] == 2 * 8 * 128
    assert l3["source"].startswith("https://huggingface.co/meta-llama/")


def test_markers_filter_and_table():
    r = run_cli("mla")
    assert r.returncode == 0
    assert "deepseek-v3" in r.stdout and "MoE 8/256+1s" in r.stdout
    assert "llama-3-8b" not in r.stdout
    moe = {d["id"] for d in json.loads(run_cli("moe", "--json").stdout)}
    assert {"mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "qwen3-30b-a3b"} <= moe
    assert "llama-3-8b" not in moe


def test_no_match_is_empty_with_note():
    r = run_cli("no-such-model-xyz", "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout) == []
    assert len(r.stderr.strip().splitlines()) == 1 and "no catalog model matches" in r.stderr
