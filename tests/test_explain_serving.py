"""`tokspeed explain` for a serving step (tokspeed.serving.step_explain): the parts per kernel family sum to
the step, the step agrees with the simulator's own (interpolated grids, affine attention: a different path),
a one-GPU worker has no collectives, and the latency splits add up to the simulated percentiles."""

import json

import pytest

from tokspeed.cli.main import main
from tokspeed.serving.fitted import fitted_for
from tokspeed.serving.run import Disagg, Load
from tokspeed.serving.step_explain import breakdown, explain_serving
from tokspeed.serving.worker import Parallelism
from tokspeed.serving_api import make_setup

CASES = [("llama-3.1-8b", "h100-sxm", "vllm", None, Parallelism(tp=1)),
         ("llama-3.1-70b", "h200-sxm", "vllm", "FP8", Parallelism(tp=8)),
         ("gpt-oss-120b", "h200-sxm", "tensorrt-llm", None, Parallelism(tp=2)),
         ("deepseek-v3", "h200-sxm", "sglang", "FP8", Parallelism(tp=1, ep=8, dp=8))]


@pytest.mark.parametrize("model,hw,engine,quant,par", CASES)
def test_parts_sum_to_the_simulators_step(model, hw, engine, quant, par):
    setup = make_setup(model, hw, engine, quant=quant, isl=1024, osl=256)
    w, _ = setup.worker(par)
    fit = fitted_for(w.resolved.profile.name, w.resolved.hw.vendor)
    for kw in (dict(decode_rows=48, context=1500), dict(prompt=1024)):
        b = breakdown(w, fit, **kw)
        assert all(p.seconds >= 0 for p in b.parts)
        assert sum(p.seconds for p in b.parts) == pytest.approx(b.total_s)
        assert b.total_s == pytest.approx(b.simulator_s, rel=0.01)
        named = {p.name: p.seconds for p in b.parts}
        host = 0.0 if engine == "sglang" else fit["step_s"]      # SGLang's overlap scheduler hides it
        assert named["host (not hidden)"] == pytest.approx(host)
        if par.gpus == 1:
            assert named["collectives"] == 0.0
        assert ("MoE experts" in named) == w.resolved.spec.is_moe


def test_latency_splits_add_up_under_a_load():
    setup = make_setup("llama-3.1-70b", "h200-sxm", "tensorrt-llm", quant="FP8", kv_dtype="fp8", isl=4000, osl=500)
    expl = explain_serving(setup, None, 1, Load("concurrency", concurrency=64), Disagg(2, 2, 2, 2))
    ttft, tpot = expl.latencies
    assert ttft.seconds * 1e3 == pytest.approx(expl.config.ttft_ms.p50)
    assert ttft.step_s + sum(p.seconds for p in ttft.parts) == pytest.approx(ttft.seconds)
    assert [p.name for p in ttft.parts][:2] == ["prefill queue", "KV transfer (link wait included)"]
    assert tpot.step_s + sum(p.seconds for p in tpot.parts) == pytest.approx(tpot.seconds)
    assert expl.decode.rows >= 1 and expl.prefill.rows == 4000


def test_cli_explains_a_multi_gpu_step(capsys):
    assert main(["explain", "llama-3.1-70b", "--hw", "h200-sxm", "--engine", "vllm", "--quant", "FP8", "--gpus", "8",
                 "--parallel", "tp=8", "--concurrency", "16", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["layout"] == "TP8" and d["gpus_per_worker"] == 8
    assert {p["name"] for p in d["decode"]["parts"]} >= {"GEMM (weights)", "attention (KV)", "collectives",
                                                        "graph replay / launches / fixed", "host (not hidden)"}
    assert d["decode"]["total_ms"] == pytest.approx(sum(p["ms"] for p in d["decode"]["parts"]))
    assert d["config"]["concurrency"] == 16
    # one sequence at a time: the explained decode step is one row
    assert main(["explain", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "vllm", "--parallel", "tp=1",
                 "--concurrency", "4", "--max-seqs", "1", "--osl", "8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decode"]["rows"] == 1


@pytest.mark.parametrize("argv", [["--parallel", "tp=x"], ["--gpus", "3", "--parallel", "tp=2"],
                                  ["--disagg", "1:"], ["--concurrency", "4", "--prefill", "10"],
                                  ["--parallel", "tp=1,pp=2", "--disagg", "1:1"], ["--rate", "0"]])
def test_cli_refuses_bad_layouts(argv, capsys):
    assert main(["explain", "llama-3.1-8b", "--hw", "h100-sxm", *argv]) == 2
    assert "Traceback" not in capsys.readouterr().err
