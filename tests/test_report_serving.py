"""The HTML report's serving section (`tokspeed report --gpus N`): the layouts of `serve` and the frontier."""

import re

import pytest

from tokspeed.report.html import render_report
from tokspeed.report.serving_section import serving_section


def test_one_gpu_report_has_no_serving_section():
    page = render_report("llama-3.1-8b", "h100-sxm", engine="vllm", charts=False)
    assert "Serving on" not in page


def test_two_gpu_report_lists_the_layouts_of_two_gpus():
    page = render_report("llama-3.1-8b", "h100-sxm", engine="vllm", charts=False, gpus=2)
    assert "<h2>Serving on 2 × " in page
    # two H100s run an 8B model as two replicas, one TP2 worker or one prefill + one decode worker (the
    # search pipelines only over 4 GPUs or more: docs/serving.md)
    for layout in ("TP1 x 2 replicas", "TP2", "disagg 1xTP1 prefill + 1xTP1 decode"):
        assert f"<td class='s'>{layout}</td>" in page
    assert "ISL 512 / OSL 128" in page           # the report's prompt and output lengths


def test_serving_section_draws_the_frontier():
    pytest.importorskip("matplotlib")
    from tokspeed.hardware.catalog import get_hardware

    html = serving_section("llama-3.1-8b", get_hardware("h100-sxm"), 2, quant=None, kv_dtype="f16", engine="vllm",
                           isl=512, osl=128)
    assert len(re.findall("<svg", html)) == 1 and "tok/s per user" in html


def test_a_model_no_layout_holds_gets_one_line():
    from tokspeed.hardware.catalog import get_hardware

    # 70B at 16 bits is ~141 GB; two 24 GB cards hold no layout of it
    html = serving_section("llama-3.1-70b", get_hardware("rtx-4090"), 2, quant="F16", kv_dtype="f16",
                           engine="vllm", isl=512, osl=128)
    assert "fits no layout" in html and "<table>" not in html
