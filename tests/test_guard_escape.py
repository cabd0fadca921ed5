"""Text from data is inert where it leaves tokspeed (tokspeed.guard.escape): CSV cells are not formulas, rich
markup in a name is printed as typed, `$…$` in a name is not TeX to matplotlib, HTML is escaped."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from hostile_server import HostileServer
from tokspeed.guard.escape import csv_cell, html, markup

ROOT = Path(__file__).resolve().parent.parent
MATH_NAME = r"$\frac{x$ GPU"  # an even number of $: matplotlib parses it as TeX


@pytest.mark.parametrize("cell, out", [("=1+1", "'=1+1"), ("+1", "'+1"), ("-cmd", "'-cmd"), ("@SUM(A1)", "'@SUM(A1)"),
                                       ("\tx", "'\tx"), ("\rx", "'\rx"), ("ok", "ok"), (-1.5, -1.5), (None, None)])
def test_csv_cells_are_never_formulas(cell, out):
    assert csv_cell(cell) == out


def test_escapes():
    assert markup("[/bold]") == "\\[/bold]"
    assert html("<a href='x'>&") == "&lt;a href=&#x27;x&#x27;&gt;&amp;"


def test_server_text_in_requests_csv_is_not_a_formula(tmp_path):
    with HostileServer("none") as srv:
        out = tmp_path / "run"
        p = subprocess.run([sys.executable, "-m", "tokspeed", "bench-server", srv.url, "--model", "formula",
                            "--requests", "1", "--warmup", "0", "-o", str(out), "--quiet"], capture_output=True,
                           text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 3, p.stderr
    rows = list(csv.DictReader(io.StringIO((out / "requests.csv").read_text())))
    assert rows[0]["error_detail"].startswith("'=HYPERLINK")
    for row in rows:
        assert not any(v.startswith(("=", "+", "@")) for v in row.values() if v)


@pytest.mark.parametrize("model", ["[/bold]", "[bold red]x[/]", "[link=http://evil.example]y"])
def test_markup_in_a_model_name_is_printed_as_typed(tmp_path, model):
    """--model '[/bold]' once crashed the console after the run (rich MarkupError)."""
    with HostileServer("none") as srv:
        p = subprocess.run([sys.executable, "-m", "tokspeed", "bench-server", srv.url, "--model", model,
                            "--requests", "1", "--warmup", "0", "-o", str(tmp_path / "run"), "--quiet"],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert "Traceback" not in p.stderr and "MarkupError" not in p.stderr
    assert model in p.stdout


@pytest.fixture
def math_hw(tmp_path):
    f = tmp_path / "hw.toml"
    f.write_text(f'name = "{MATH_NAME}"\nkind = "gpu"\nvendor = "x"\nmemory_gb = 24\nbandwidth_gbps = 1000\n'
                 'fp16_tflops = 100\n'.replace("\\", "\\\\"))
    return f


def test_a_dollar_name_does_not_crash_report_or_plot(tmp_path, math_hw):
    """A `$…$` hardware name crashed matplotlib in `report` and `--plot`."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    p = run_cli("report", "llama-3-8b", "--hardware", math_hw, "-o", out)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and out.stat().st_size > 1000
    png = tmp_path / "p.png"
    p = run_cli("predict", "llama-3-8b", "--hardware", math_hw, "--plot", png)
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_markup_in_run_files_is_printed_as_typed(tmp_path):
    """compare-runs on run files whose model or label held '[/bold]' crashed the console (MarkupError)."""
    import json

    from tokspeed.measure.run_file import new_run

    pt = {"batch": 1, "context": 0, "prompt": 8, "gen": 8, "prefill_tok_s": 100.0, "decode_tok_s": 10.0}
    files = []
    for i, name in enumerate(["[/bold]", "[link=http://evil.example]x"]):
        f = tmp_path / f"run{i}.json"
        f.write_text(json.dumps(new_run(model={"id": name, "source": "random"}, hardware={"id": "[/i]"},
                                        backend="[/b]", device="cpu", quant="F32", points=[pt])))
        files.append(f)
    p = run_cli("compare-runs", *files)
    assert p.returncode == 0, p.stderr
    assert "[/bold]" in p.stdout and "Traceback" not in p.stderr
