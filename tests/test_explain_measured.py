"""Measured stage times from a run file sit beside the predicted ones."""

import json
import subprocess
import sys

import pytest

from tokspeed.errors import UserError
from tokspeed.explain import explain
from tokspeed.explain.measured import load_measured


def test_measured_stages_attach_by_key_and_label(tmp_path):
    run = tmp_path / "RUN.json"
    run.write_text(json.dumps({"decode": {"ms_per_token": 25.0},
                               "stages": {"ffn": 0.0161, "QKV projection": 0.0024, "lm_head_ms": 1.5}}))
    e = explain("llama-3-8b", "rtx-4090", measured=run, with_levers=False)
    by = {s.key: s for s in e.journey.stages}
    assert by["ffn"].measured_s == pytest.approx(0.0161)
    assert by["qkv"].measured_s == pytest.approx(0.0024)
    assert by["lm_head"].measured_s == pytest.approx(0.0015)
    assert by["rope"].measured_s is None
    assert e.measured.step_s == pytest.approx(0.025)


def test_measured_list_form(tmp_path):
    run = tmp_path / "RUN.json"
    run.write_text(json.dumps({"stages": [{"name": "attention", "ms": 0.3}, {"key": "ffn", "seconds": 0.02}]}))
    m = load_measured(run)
    assert m.stages == {"attention": pytest.approx(0.0003), "ffn": 0.02}


@pytest.mark.parametrize("text", ["not json", "[1, 2]", "{}"])
def test_bad_run_files(tmp_path, text):
    run = tmp_path / "RUN.json"
    run.write_text(text)
    with pytest.raises(UserError):
        load_measured(run)


def test_cli_shows_measured_column(tmp_path):
    run = tmp_path / "RUN.json"
    run.write_text(json.dumps({"decode": {"ms_per_token": 25.0}, "stages": {"ffn": 0.0161}}))
    r = subprocess.run([sys.executable, "-m", "tokspeed", "explain", "llama-3-8b", "--hardware", "rtx-4090",
                        "--measured", str(run)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "measured" in r.stdout and "16.10 ms" in r.stdout


def run_file(tmp_path, points, **top):
    """A minimal RUN.json in the `tokspeed measure` schema (tokspeed/measure/run_file.py, version 1)."""
    run = tmp_path / "RUN.json"
    run.write_text(json.dumps({"schema": "tokspeed.run", "schema_version": 1, "backend": "torch", "device": "cpu",
                               "quant": "F16", "points": points, **top}))
    return run


def test_a_llama_cpp_run_sets_the_attention_explained(tmp_path):
    # `measure --backend llama.cpp` records -fa (llama-cpp-python: off); explaining beside it predicts the same
    # attention unless --flash-attn says otherwise; a torch run has no such setting
    pts = [{"batch": 1, "context": 8192, "decode_ms_per_token": 20.0}]
    off = run_file(tmp_path, pts, backend="llama.cpp", settings={"flash_attention": False})
    e = explain("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192, measured=off, with_levers=False)
    assert e.prediction.flash_attention is False
    asked = explain("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192, measured=off, with_levers=False,
                    flash_attention=True)
    assert asked.prediction.flash_attention is True and asked.journey.total_s < e.journey.total_s
    torch_run = run_file(tmp_path, pts, settings={"flash_attention": False})
    assert explain("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192, measured=torch_run,
                   with_levers=False).prediction.flash_attention is True


def test_run_file_blocks_compare_with_summed_stages(tmp_path):
    run = run_file(tmp_path, [
        {"batch": 1, "context": 0, "decode_ms_per_token": 30.0,
         "stages_ms": {"embedding": 0.05, "attention": 9.0, "ffn": 18.0, "lm_head": 2.0, "sampling": 0.4}},
        {"batch": 1, "context": 4096, "decode_ms_per_token": 33.0,
         "stages_ms": {"embedding": 0.05, "attention": 11.0, "ffn": 18.0, "lm_head": 2.0, "sampling": 0.4}}])
    e = explain("llama-3-8b", "rtx-4090", context=4000, measured=run, with_levers=False)
    m = e.measured
    assert m.point["context"] == 4096 and m.step_s == pytest.approx(0.033)      # the closest point
    cmp = {r["block"]: r for r in m.comparison}
    assert cmp["attention"]["measured_s"] == pytest.approx(0.011)
    by = {s.key: s for s in e.journey.stages}
    launch = e.prediction.engine_profile.launch_s
    attn = ("attn_norm", "qkv", "rope", "attention", "o_proj", "residual_attn")
    assert cmp["attention"]["predicted_s"] == pytest.approx(sum(by[k].seconds + by[k].kernels * launch for k in attn))
    # every predicted stage lands in exactly one block, except the CPU launch/tokenize stages
    total = sum(r["predicted_s"] for r in m.comparison)
    assert total == pytest.approx(e.journey.total_s - by["tokenize"].seconds)


def test_run_file_cli_table(tmp_path):
    run = run_file(tmp_path, [{"batch": 1, "context": 0, "decode_ms_per_token": 30.0,
                               "stages_ms": {"attention": 9.0, "ffn": 18.0}}])
    r = subprocess.run([sys.executable, "-m", "tokspeed", "explain", "llama-3-8b", "--hardware", "rtx-4090",
                        "--measured", str(run)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())        # prose wraps at the terminal's width
    assert "beside predicted" in out and "18.00 ms" in out and "30.00 ms" in out


def test_run_file_without_points(tmp_path):
    with pytest.raises(UserError):
        load_measured(run_file(tmp_path, []))


def test_reads_what_tokspeed_measure_writes(tmp_path):
    from tokspeed.measure import run_file as run_file_mod     # pure Python: no optional dependency to skip on
    run = run_file_mod.new_run(backend="torch", device="cpu", quant="F32", model={"id": "qwen2.5-0.5b"}, points=[
        {"batch": 1, "context": 512, "prompt": 64, "gen": 8, "decode_ms_per_token": 40.0,
         "stages_ms": {"embedding": 0.1, "attention": 12.0, "ffn": 25.0, "lm_head": 2.5, "sampling": 0.2}}])
    path = run_file_mod.write_run(run, tmp_path / "RUN.json")
    run_file_mod.read_run(path)                                   # valid for its own reader
    e = explain("llama-2-7b", "rtx-4090", context=512, measured=path, with_levers=False)
    assert {r["block"] for r in e.measured.comparison} == {"embedding", "attention", "ffn", "lm_head", "sampling"}
    assert e.measured.step_s == pytest.approx(0.040)
    assert e.to_dict()["measured"]["point"]["backend"] == "torch"
