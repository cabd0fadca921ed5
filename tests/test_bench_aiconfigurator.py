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
