"""Every line fits the terminal (issue 29): not only tables but titles, captions, prose and the `engine model: ...`
footer wrap at COLUMNS, piped too (80 and 100 columns)."""

import os
import subprocess
import sys

import pytest

VERBS = [
    ("predict", "deepseek-v3", "--hardware", "h200-sxm", "--gpus", "8", "--engine", "vllm"),
    ("predict", "llama-3.1-70b", "--hardware", "rtx-4090", "-q", "Q4_K_M", "--offload", "auto"),
    ("predict", "llama-3.1-405b", "--hardware", "rtx-4090"),                       # ways to run it
    ("sweep", "llama-3-8b", "--hardware", "rtx-4090", "-q", "F16,Q4_K_M", "--context", "8K,128K"),
    ("fit", "--hardware", "rtx-4090", "--top", "5"),
    ("explain", "llama-3.1-8b", "--hardware", "rtx-4090"),
    ("compare", "llama-3.1-8b", "--hardware", "rtx-4090,h100-sxm,m4-max-40"),
]


@pytest.mark.parametrize("width", (80, 100))
@pytest.mark.parametrize("args", VERBS, ids=lambda a: " ".join(a[:2]))
def test_no_line_wider_than_columns(args, width):
    env = dict(os.environ, COLUMNS=str(width))
    r = subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, r.stderr
    wide = [line for line in r.stdout.splitlines() if len(line) > width]
    assert not wide, f"{len(wide)} lines wider than {width}: {wide[0]!r}"
    if args[0] == "predict":
        assert "engine model:" in r.stdout
