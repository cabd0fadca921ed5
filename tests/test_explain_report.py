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


def test_report_keeps_the_engine_build_and_flash_attention():
    # a 2024 build (b3000) runs attention unfused by default; -fa on fuses it: the header says which, and the
    # journey's total is the explanation's for the same build and setting
    from tokspeed.explain import explain
    from tokspeed.report.html import render_report
    from tokspeed.units import fmt_seconds

    for fa, said in ((None, "era 2024, FlashAttention off"), (True, "era 2024, FlashAttention on")):
        kw = {"engine_version": "b3000", **({"flash_attention": fa} if fa is not None else {})}
        text = render_report("llama-3-8b", "rtx-4090", quant="Q4_K_M", prompt=0, gen=16, context=8192, charts=False,
                             **kw)
        assert f"engine llama.cpp-cuda ({said})" in text
        e = explain("llama-3-8b", "rtx-4090", quant="Q4_K_M", context=8192, with_levers=False, **kw)
        assert f"<b>{fmt_seconds(e.journey.total_s)}</b>" in text


@pytest.mark.parametrize("name", ["report.pdf", "no/such/dir/r.html"])
def test_report_bad_output(tmp_path, name):
    r = subprocess.run([sys.executable, "-m", "tokspeed", "report", "llama-3-8b", "--hardware", "rtx-4090",
                        "-o", str(tmp_path / name)], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_report_of_a_setup_that_does_not_fit():
    """Llama 3.1 70B Q4_K_M (42.5 GB of weights) on a 24 GB RTX 4090: the report opens with "does not fit", the
    ways to run it with their figures, and labels every speed card hypothetical."""
    from tokspeed.advise.alternatives import ways_to_run
    from tokspeed.report.html import render_report

    text = render_report("llama-3.1-70b", "rtx-4090", quant="Q4_K_M", charts=False)
    banner = text.index('<div class="nofit">')
    assert banner < text.index('<div class="cards"')
    assert "Does not fit: needs 43." in text and "of 25.77 GB" in text   # 24 GiB = 25,769,803,776 B
    for w in ways_to_run("llama-3.1-70b", "rtx-4090", quant="Q4_K_M"):
        assert w["description"] in text
    assert "2 x NVIDIA GeForce RTX 4090" in text                  # 42.5 GB over two 24 GB cards
    assert text.count("hypothetical: does not fit") == 4          # decode, bound, prefill, TTFT cards
    assert "none: the weights and buffers alone exceed the capacity" in text   # not "largest context 0"


def test_report_cards_sources_and_levers():
    import re

    from tokspeed.hardware.catalog import get_hardware
    from tokspeed.report.html import render_report, split_citations

    text = render_report("llama-3-8b", "h100-sxm", quant="Q4_K_M", charts=False)
    # six cards laid out as one row (or two even rows): the grid has as many columns as cards
    m = re.search(r'<div class="cards" style="--n:(\d+)">', text)
    assert m and int(m.group(1)) == text.count('<div class="card')  - 1 == 6
    # the lever table starts with the "now" row
    assert re.search(r"<tr class='now'><td>now</td><td>as above</td>", text)
    # every citation of the device's source is listed whole (nothing cut at 300 characters)
    hw = get_hardware("h100-sxm")
    cites = split_citations(hw.source)
    assert len(cites) == 6 and cites[0].startswith("[HPCT]") and cites[-1].startswith("arch: NVIDIA H100")
    assert text.count("<li><b>[") == 5
    assert "cites NVIDIA datasheets/whitepapers)" in text          # the tail of the source, past 300 characters
    footer = text[text.index("<footer>"):text.index("</footer>")]
    assert footer.rstrip().endswith("for the formulas")
