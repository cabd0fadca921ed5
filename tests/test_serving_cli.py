"""`tokspeed serve` and `predict --batch max` on the command line: the JSON contract and one-line errors."""

import json
import subprocess
import sys

import pytest

from tokspeed.cli.main import main
from tokspeed.errors import UserError
from tokspeed.serving.worker import Parallelism

CONFIG_KEYS = {"layout", "concurrency", "rate_rps", "output_tok_s", "output_tok_s_per_gpu", "tok_s_per_user",
               "ttft_ms", "tpot_ms", "itl_ms", "e2e_s", "meets_slo", "band"}
TOP_KEYS = {"model", "hardware", "gpus", "engine", "engine_version", "quant", "kv_dtype", "isl", "osl", "scenario",
            "slo", "configs", "frontier"}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True)


def _check_config(c):
    assert CONFIG_KEYS <= set(c)
    assert set(c["layout"]) >= {"tp", "pp", "ep", "dp", "replicas", "disagg"}
    for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_s"):
        assert set(c[k]) == {"p50", "p90", "p99"}
        assert c[k]["p50"] <= c[k]["p90"] <= c[k]["p99"]
    assert c["band"]["low"] <= c["output_tok_s"] <= c["band"]["high"]


def test_serve_one_layout_json(capsys):
    assert main(["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "vllm", "--gpus", "2", "--parallel", "tp=1",
                 "--concurrency", "16", "--isl", "512", "--osl", "64", "--slo-tpot-ms", "100", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert TOP_KEYS <= set(d) and d["scenario"] == "concurrency" and d["gpus"] == 2
    assert d["slo"]["tpot_ms"] == 100 and d["frontier"] == []
    (c,) = d["configs"]
    _check_config(c)
    assert c["layout"]["replicas"] == 2 and c["layout"]["disagg"] is None
    assert c["output_tok_s_per_gpu"] == pytest.approx(c["output_tok_s"] / 2)
    assert c["meets_slo"] is True


def test_serve_search_json_and_frontier(capsys):
    assert main(["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "vllm", "--gpus", "2", "--isl", "512",
                 "--osl", "64", "--slo-ttft-ms", "2000", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scenario"] == "concurrency" and len(d["configs"]) >= 3
    for c in d["configs"]:
        _check_config(c)
    best = d["configs"][0]
    assert best["meets_slo"] is True
    assert all(best["output_tok_s_per_gpu"] >= c["output_tok_s_per_gpu"] for c in d["configs"] if c["meets_slo"])
    assert any(c["layout"]["disagg"] for c in d["configs"])
    f = d["frontier"]
    assert f and all(a["tok_s_per_gpu"] > b["tok_s_per_gpu"] and a["tok_s_per_user"] < b["tok_s_per_user"]
                     for a, b in zip(f, f[1:]))


def test_serve_disagg_and_rate(capsys):
    assert main(["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "sglang", "--disagg", "1x1:1x1",
                 "--rate", "2", "--isl", "1024", "--osl", "64", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    c = d["configs"][0]
    assert d["scenario"] == "rate" and d["gpus"] == 2
    assert c["layout"]["disagg"] == {"prefill_workers": 1, "prefill_tp": 1, "decode_workers": 1, "decode_tp": 1}
    assert c["rate_rps"] == 2
    # a stable rate: output = rate x OSL within the drain of the last requests
    assert c["output_tok_s"] == pytest.approx(2 * 64, rel=0.15)


def test_serve_table(capsys):
    assert main(["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--parallel", "tp=1", "--offline", "--requests", "50",
                 "--isl", "128", "--osl", "16"]) == 0
    out = capsys.readouterr().out
    assert "tok/s/GPU" in out and "TP1" in out


@pytest.mark.parametrize("bad", [
    ["--rate", "nan"], ["--rate", "inf"], ["--rate", "-1"], ["--rate", "0"], ["--concurrency", "0"],
    ["--concurrency", "-3"], ["--isl", "-5"], ["--osl", "0"], ["--parallel", "tp=x"], ["--parallel", "tp=3"],
    ["--disagg", "1:"], ["--slo-ttft-ms", "nan"], ["--slo-tpot-ms", "-1"], ["--length-ratio", "2"],
    ["--prefix-hit", "inf"], ["--gpus", "0"], ["--parallel", "tp=2,dp=2"], ["--parallel", "tp=1,ep=2"],
    ["--spec-acceptance", "1.5"], ["--memory-fraction", "0"], ["--lengths", "/nonexistent/requests.jsonl"],
    ["--speculative", "mtp"], ["--parallel", "tp=2", "--gpus", "1"],
])
def test_bad_input_is_one_line_exit_2(bad):
    r = run_cli("serve", "llama-3.1-8b", "--hw", "h100-sxm", *bad)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_replay_a_trace(tmp_path, capsys):
    p = tmp_path / "requests.jsonl"
    rows = [{"type": "run"}] + [{"start_unix_s": 1000 + i * 0.5, "prompt_tokens": 256, "output_tokens": 32}
                                for i in range(20)]
    p.write_text("\n".join(json.dumps(r) for r in rows))
    assert main(["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--parallel", "tp=1", "--lengths", str(p), "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["configs"][0]
    # 20 requests over 9.5 s of arrivals, each done well under a second: ~20 x 32 tokens / ~10 s
    assert 50 < c["output_tok_s"] < 70


def test_predict_batch_max_is_kv_or_scheduler_bound(capsys):
    assert main(["predict", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "vllm", "--quant", "F16",
                 "--prompt", "100000", "--gen", "28000", "--batch", "max", "--json"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    # 0.9 x 80 GB - 16 GB weights - workspace leaves ~55 GB = ~420K tokens of 128 KiB: 3 sequences of 128K
    assert d["batch"] == 3 and "batch max = 3" in captured.err


def test_serve_plot_draws_the_frontier(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "frontier.svg"
    assert main(["serve", "llama-3.1-8b", "--hw", "h100-sxm", "--gpus", "1", "--isl", "256", "--osl", "32",
                 "--no-disagg", "--plot", str(out)]) == 0
    text = out.read_text()
    assert "<svg" in text and "tok/s per user" in text


def test_gpus_must_match_the_layout():
    r = run_cli("serve", "llama-3.1-8b", "--hw", "h100-sxm", "--parallel", "tp=2", "--gpus", "3", "--concurrency", "4")
    assert r.returncode == 2 and "tp" not in r.stderr.split(":")[0] and len(r.stderr.strip().splitlines()) == 1


def test_a_request_larger_than_the_pool_is_one_line():
    r = run_cli("serve", "llama-3.1-8b", "--hw", "h100-sxm", "--parallel", "tp=1", "--concurrency", "1",
                "--isl", "10M", "--osl", "10")
    assert r.returncode == 2 and "does not fit the KV pool" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["device", "fifo", "deep", "long_line"])
def test_a_hostile_lengths_file_is_one_line_and_bounded(tmp_path, capsys, kind):
    """`--lengths` is read as a stream of bounded lines from a regular file: /dev/zero (size 0, endless), a FIFO,
    a line nested 200,000 deep (was a RecursionError), a 5 MiB line: one line each, exit 2."""
    import os

    if kind == "device":
        path = "/dev/zero"
    elif kind == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    else:
        path = str(tmp_path / "trace.jsonl")
        with open(path, "w") as f:
            f.write("[" * 200_000 + "\n" if kind == "deep" else '{"start": 0, "pad": "' + "x" * (5 << 20) + '"}\n')
    rc = main(["serve", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--lengths", path,
               "--parallel", "tp=1"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_a_search_beyond_a_rack_is_refused_up_front(capsys):
    # the layouts grow with the GPU count (22,637 at 4,096 GPUs, each simulated at several levels)
    rc = main(["serve", "llama-3.1-8b", "--hardware", "h100-sxm", "--gpus", "4096", "--engine", "vllm",
               "--isl", "100", "--osl", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and "at most 64 GPUs" in err and "--gpus 4096" in err


def test_serve_layout_reads_with_predicts_parser():
    # one parser for both: predict's parallel= and serve's --parallel read "tp=4,pp=2" the same way, and both
    # refuse a degree given twice (serve's own regex refused it, predict's loop took the last)
    from tokspeed.cli.serve import parse_layout
    from tokspeed.scale.parallel import parse_parallel

    p = parse_parallel("tp=4,pp=2", 8, "vllm")
    lay = parse_layout("tp=4,pp=2")
    assert (p.tp, p.pp) == (lay.tp, lay.pp) == (4, 2)
    assert parse_layout("ep=8, dp=8") == Parallelism(tp=1, ep=8, dp=8)
    for bad in ("tp=2,tp=4", "tp=0", "tp=x", "tp=2,"):
        with pytest.raises(UserError):
            parse_parallel(bad, 4, "vllm")
        with pytest.raises(UserError, match="--parallel"):
            parse_layout(bad)
