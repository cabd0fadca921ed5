"""`tokspeed report -o FILE.html`: one self-contained file (inline SVG, no scripts, nothing fetched)."""

import re
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")


def test_report_is_self_contained(tmp_path):
    out = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "tokspeed", "report", "llama-3-8b", "--hardware", "rtx-4090",
                        "--quant", "Q4_K_M", "--context", "1024", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("<svg") == 3                              # overview, stages, context charts
    # nothing loaded from anywhere: no scripts, stylesheets, images or fonts by URL
    assert "<script" not in text and "<link" not in text and "<img" not in text
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', text)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    for needle in ("The journey of one token", "QKV projection", "attention over the KV cache", "LM head",
                   "sampling + loop control", "What if", "Q4_K_M", "NVIDIA GeForce RTX 4090"):
        assert needle in text


def test_report_total_matches_explain(tmp_path):
    from tokspeed.explain import explain
    from tokspeed.report.html import render_report
    from tokspeed.units import fmt_seconds

    text = render_report("llama-2-7b", "h100-sxm", prompt=128, gen=16, charts=False)
    e = explain("llama-2-7b", "h100-sxm", context=128, with_levers=False)
    assert f"<b>{fmt_seconds(e.journey.total_s)}</b>" in text
    assert "<svg" not in text


@pytest.mark.parametrize("name", ["report.pdf", "no/such/dir/r.html"])
def test_report_bad_output(tmp_path, name):
    r = subprocess.run([sys.executable, "-m", "tokspeed", "report", "llama-3-8b", "--hardware", "rtx-4090",
                        "-o", str(tmp_path / name)], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
