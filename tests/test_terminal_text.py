"""Text from files and users is printed, never interpreted; unknown figures show as unknown (issue #10).

A device named ``[/bold]`` crashed predict/explain with rich's MarkupError, ``[link=...]`` vanished into a
hyperlink, GGUF metadata with ANSI escapes and U+202E reached the terminal raw, and a device without an FP16
figure ended explain --prefill and report in a TypeError."""

import os
import subprocess
import sys

import pytest

from tokspeed.report.text import FitTable, clean

EVIL = "[/bold] [link=https://example.invalid]click[/link]"

NO_FP16 = f'''
name = "{EVIL}"
kind = "gpu"
vendor = "Acme"
memory_gb = 24
bandwidth_gbps = 500
host_link = "PCIe 4.0 x16"
'''


def cli(*args, columns=100, timeout=180):
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run([sys.executable, "-m", "tokspeed", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_clean_shows_controls_and_bidi_as_escapes():
    assert clean("a\x1b[31mb\u202ec\x07") == "a\\x1b[31mb\\u202ec\\x07"
    assert clean("tab\tand\nnewline") == "tab\tand\nnewline"      # layout characters stay
    assert clean("\u2066x\u2069\u200f") == "\\u2066x\\u2069\\u200f"
    assert clean(None) == ""


def test_fittable_cells_are_not_markup():
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    t = FitTable(title=EVIL)
    t.column("name").column("n", numeric=True)
    t.row(EVIL, "1,234.5")
    t.print(Console(file=buf, width=100, soft_wrap=True))
    out = buf.getvalue()
    assert "[/bold]" in out and "[link=https://example.invalid]" in out and "1,234.5" in out


@pytest.fixture
def evil_device(tmp_path):
    p = tmp_path / "evil.toml"
    p.write_text(NO_FP16, encoding="utf-8")
    return p


@pytest.mark.parametrize("verb", [
    ("predict", "llama-3-8b", "-q", "Q4_K_M"),
    ("explain", "llama-3-8b", "-q", "Q4_K_M"),
    ("explain", "llama-3-8b", "-q", "Q4_K_M", "--prefill", "512"),
    ("sweep", "llama-3-8b", "-q", "Q4_K_M", "--context", "1K"),
    ("compare", "llama-3.1-70b", "-q", "Q4_K_M"),
])
def test_markup_in_a_device_name_prints_literally(evil_device, verb):
    r = cli(*verb, "--hardware", evil_device)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "[/bold]" in r.stdout and "[link=https://example.invalid]click[/link]" in r.stdout


def test_no_fp16_figure_shows_unknown_never_zero(evil_device, tmp_path):
    r = cli("predict", "llama-3-8b", "-q", "Q4_K_M", "--hardware", evil_device)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if "prefill" in line and "│" in line)
    assert "unknown" in row
    r = cli("explain", "llama-3-8b", "-q", "Q4_K_M", "--prefill", "512", "--hardware", evil_device)
    assert r.returncode == 0, r.stderr
    assert "= unknown (no FLOP/s figure" in r.stdout
    assert "0 TFLOPS" not in r.stdout and "0 FLOP/byte" not in r.stdout
    out = tmp_path / "r.html"
    r = cli("report", "llama-3-8b", "-q", "Q4_K_M", "--hardware", evil_device, "-o", out)
    assert r.returncode == 0, r.stderr
    html = out.read_text(encoding="utf-8")
    assert "unknown" in html and "0 TFLOPS" not in html
    assert "[/bold]" in html                     # the name, HTML-escaped where needed, never dropped


def test_catalog_m4_max_prefill_and_report_do_not_crash(tmp_path):
    """The catalog's Apple M4 Max: Apple publishes no FP16 figure; the catalog's is derived (an assumed clock)."""
    r = cli("explain", "llama-3.1-8b", "--hardware", "m4-max-40", "-q", "Q4_K_M", "--prefill", "4096")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    r = cli("report", "llama-3.1-8b", "--hardware", "m4-max-40", "-q", "Q4_K_M", "-o", tmp_path / "m4.html")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_gguf_name_with_ansi_and_bidi_is_escaped(tmp_path):
    pytest.importorskip("gguf")
    sys.path.insert(0, os.path.dirname(__file__))
    from files_fixtures import TINY, write_llama_gguf

    name = "evil\x1b[31mRED\u202eabc[bold]"
    # the model's id is the file's stem, so the hostile text goes in the file name as well as in general.name
    p = write_llama_gguf(tmp_path / f"{name}.gguf", shape=TINY, name=name)
    for verb in (("predict", p, "--hardware", "rtx-4090"), ("explain", p, "--hardware", "rtx-4090"),
                 ("inspect", p)):
        r = cli(*verb)
        assert r.returncode == 0, (verb, r.stderr)
        assert "\x1b" not in r.stdout and "\u202e" not in r.stdout, verb
        assert "evil\\x1b[31mRED\\u202eabc[bold]" in r.stdout, verb
