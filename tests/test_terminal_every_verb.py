"""80 columns everywhere: at COLUMNS=80, piped or on a terminal (a pseudo-terminal via util-linux `script`),
and piped without COLUMNS (80 then), no line of stdout or stderr is wider than 80 for predict, fit, serve,
sweep, explain, hardware and models, their --help and their errors; ids in the fit, hardware and models tables
are whole (never folded mid-word), so they can be copied."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from tokspeed.hardware.devices import all_hardware
from tokspeed.hardware.links import all_links
from tokspeed.models.catalog import model_ids

WIDTH = 80
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
RUNS = [
    ("predict", "llama-3-8b", "--hardware", "rtx-4090"),
    ("predict", "qwen3-30b-a3b", "--hardware", "M4 Max", "--engine", "mlx"),   # a note on stderr
    ("predict", "llama-3-8b", "--hardware", "Ryzen AI Max+ 395"),              # the driver note
    ("fit", "--hardware", "rtx-4090", "--top", "12"),
    ("serve", "llama-3.1-8b", "--hardware", "h100-sxm"),
    ("sweep", "llama-3.1-8b", "--hardware", "rtx-4090", "--context", "8K,128K"),
    ("explain", "llama-3-8b", "--hardware", "rtx-4090"),
    ("hardware",), ("hardware", "rtx-4070-laptop"), ("models",), ("models", "llama-3-8b"),
]
HELP = [(verb, "--help") for verb in ("predict", "fit", "serve", "sweep", "explain", "hardware", "models")]
ERRORS = [
    ("predict", "lama-3-8b", "--hardware", "rtx-4090"), ("serve", "lama", "--hardware", "h100-sxm"),
    ("predict", "llama-3-8b"), ("fit",), ("sweep", "llama-3-8b", "--hardware", "rtx-4090", "--context", "x"),
    ("explain", "llama-3-8b", "--hardware", "nope-gpu"), ("hardware", "nope-gpu"),
]


def _env(columns):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = str(columns)
    return env


def piped(args, columns=WIDTH):
    r = subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True,
                       env=_env(columns), timeout=300)
    return r.returncode, r.stdout, r.stderr


def on_a_terminal(args, tmp_path):
    """stdout on a pseudo-terminal (`script`), stderr to a file."""
    err = tmp_path / "stderr.txt"
    cmd = " ".join(map(_quote, [sys.executable, "-m", "tokspeed", *args])) + f" 2>{_quote(str(err))}"
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, env=_env(WIDTH),
                       timeout=300)
    return r.returncode, ANSI.sub("", r.stdout.replace("\r", "")), ANSI.sub("", err.read_text())


def _quote(s):
    import shlex

    return shlex.quote(s)


def _too_wide(*texts):
    return [line for t in texts for line in t.splitlines() if len(line) > WIDTH]


@pytest.mark.parametrize("args", RUNS + HELP + ERRORS, ids=lambda a: " ".join(a))
def test_piped_at_80_columns(args):
    rc, out, err = piped(args)
    assert rc in (0, 2) and "Traceback" not in err
    wide = _too_wide(out, err)
    assert not wide, f"{len(wide)} lines over {WIDTH}: {wide[0]!r}"
    if args in ERRORS:
        assert rc == 2 and err.startswith("tokspeed") and "error:" in err


@pytest.mark.parametrize("args", [RUNS[0], RUNS[1], RUNS[3], HELP[1], ERRORS[0]], ids=lambda a: " ".join(a))
def test_piped_without_columns_is_80(args):
    rc, out, err = piped(args, columns=None)
    wide = _too_wide(out, err)
    assert not wide, f"{len(wide)} lines over {WIDTH}: {wide[0]!r}"


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux `script` (a pseudo-terminal) not installed")
@pytest.mark.parametrize("args", [RUNS[1], RUNS[3], RUNS[4], RUNS[7], HELP[1], ERRORS[0], ERRORS[2]],
                         ids=lambda a: " ".join(a))
def test_on_a_terminal_at_80_columns(args, tmp_path):
    rc, out, err = on_a_terminal(args, tmp_path)
    assert "Traceback" not in err
    wide = _too_wide(out, err)
    assert not wide, f"{len(wide)} lines over {WIDTH}: {wide[0]!r}"


@pytest.mark.parametrize("args,ids", [(("fit", "--hardware", "rtx-4090"), "models"), (("models",), "models"),
                                      (("hardware",), "hardware")], ids=["fit", "models", "hardware"])
def test_ids_in_tables_are_whole(args, ids):
    known = set(model_ids()) if ids == "models" else {h.id for h in all_hardware()} | {k.id for k in all_links()}
    _, out, _ = piped(args)
    first = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    named = [c for c in first if c]
    assert named and all(c in known for c in named), [c for c in named if c not in known][:5]
    assert len(named) == len([line for line in out.splitlines() if line.startswith("│") and line.split("│")[1].strip()])
