"""The scale options on the command line: JSON sections, plan, and one-line errors."""

import json
import subprocess
import sys

from tokspeed.cli.main import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True)


def test_predict_json_gains_devices_and_parallel(capsys):
    assert main(["predict", "llama-3-8b", "--hw", "h100-sxm", "--engine", "vllm", "--gpus", "2", "--parallel", "tp",
                 "--users", "8", "--price-per-hour", "5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["devices"]["count"] == 2 and d["parallel"]["tp"] == 2
    assert d["decode"]["tok_s"] > 0 and d["decode"]["aggregate_tok_s"] == d["decode"]["tok_s"]   # batch 1
    assert d["serving"]["users"]["users"] == 8
    assert d["cost"]["usd_per_million_tokens"] > 0


def test_predict_single_device_json_keeps_contract(capsys):
    assert main(["predict", "llama-3-8b", "--hw", "rtx-4090", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("model", "hardware", "memory", "decode", "prefill", "ttft_s", "devices", "parallel", "cost"):
        assert key in d
    assert d["devices"]["count"] == 1 and d["parallel"]["style"] == "none"


def test_offload_table_renders(capsys):
    assert main(["predict", "llama-3-8b", "--hw", "rtx-4090", "--gpu-layers", "10"]) == 0
    out = capsys.readouterr().out
    assert "offload (layers)" in out and "VRAM vs host link: 32.0x" in out


def test_bad_parallel_is_one_line_exit_2():
    r = run_cli("predict", "llama-3-8b", "--hw", "h100-sxm", "--gpus", "4", "--parallel", "tp=3,pp=2")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_plan_ranks_setups_that_meet_the_target(capsys):
    assert main(["plan", "llama-3-8b", "-q", "Q4_K_M", "--target-tok-s", "100", "--hw",
                 "rtx-4090,rtx-3060,h100-sxm,m2-10", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["options"] and all(o["meets"] and o["tok_s"] >= 100 for o in d["options"])
    assert {o["hardware"] for o in d["options"]} <= {"rtx-4090", "h100-sxm", "rtx-3060"}
    assert "m2-10" not in {o["hardware"] for o in d["options"]}    # 100 GB/s cannot give 100 tok/s on 4.9 GB


def test_plan_budget_needs_prices(tmp_path, capsys):
    r = run_cli("plan", "llama-3-8b", "--target-tok-s", "10", "--budget", "2")
    assert r.returncode == 2 and "prices" in r.stderr
    prices = tmp_path / "prices.toml"
    prices.write_text('rtx-4090 = 0.40\nh100-sxm = 2.50\n')
    assert main(["plan", "llama-3-8b", "--target-tok-s", "10", "--hw", "rtx-4090,h100-sxm", "--prices", str(prices),
                 "--budget", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [o["hardware"] for o in d["options"]] == ["rtx-4090"] and d["options"][0]["price_per_hour"] == 0.40


def test_plan_keeps_engines_on_their_backends():
    from tokspeed.hardware.catalog import get_hardware
    from tokspeed.advise.plan import runs_on

    assert runs_on("llama.cpp", get_hardware("m2-ultra-76")) and not runs_on("llama.cpp", get_hardware("tpu-v5e"))
    assert runs_on("mlx", get_hardware("m4-max-40")) and not runs_on("mlx", get_hardware("rtx-4090"))
    assert not runs_on("vllm", get_hardware("m4-max-40")) and runs_on("vllm", get_hardware("h100-sxm"))
    assert not runs_on("exllamav2", get_hardware("ddr5-5600-2ch"))
