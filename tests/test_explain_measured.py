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
