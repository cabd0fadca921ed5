"""-o DIR writes report.html (self-contained, every chart, text escaped) and requests.csv; --compare
overlays runs; the prediction is drawn over the measured curve with the gap stated."""

import csv
import json
import re

import pytest

from serverbench_fake import FakeServer
from tokspeed.cli.main import main

pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


@pytest.fixture(scope="module")
def run_dir(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run"
    rc = main(["bench-server", server.url, "--model", "mix:ok,ok,ok,http500", "--concurrency", "1,2", "--requests", "8",
               "--warmup", "0", "--slo-ttft-ms", "500", "--slo-tpot-ms", "200", "-o", str(out), "--quiet",
               "--hardware", "rtx-4090", "--predict-model", "llama-3-8b", "--quant", "Q4_K_M"])
    assert rc == 3  # the 500s
    return out


def test_report_is_self_contained_with_every_chart(run_dir):
    html = (run_dir / "report.html").read_text()
    assert html.startswith("<!doctype html>") and "<script" not in html
    assert not re.search(r"""(src|href)=["']?https?:""", html)  # nothing fetched from the network
    for title in ("output throughput vs load", "TTFT percentiles vs load", "TPOT percentiles vs load",
                  "goodput vs load", "TTFT distribution", "inter-token gap distribution",
                  "failed requests by kind over time"):
        assert title in html, title
    assert html.count("<svg") == 8
    assert "SLO 500 ms (p90)" in html and "SLO 200 ms (p90)" in html  # the SLO lines
    assert "http_5xx" in html  # the errors chart's legend
    assert "tokspeed prediction" in html and "measured/predicted" in html  # prediction drawn, gap stated
    assert "b1234-fake" in html  # the engine version the server reported


def test_prediction_gap_in_the_report_is_measured_over_predicted(run_dir):
    s = json.loads((run_dir / "summary.json").read_text())
    rows = {r["phase"]: r for r in s["prediction"]["phases"]}
    html = (run_dir / "report.html").read_text()
    for ph in s["phases"]:
        r = rows[ph["phase"]]
        assert r["predicted_output_tok_s"] == pytest.approx(ph["concurrency"] * r["predicted_tok_s"])
        # the report states (and draws) the scheduler simulation, run with the lengths the requests had
        assert r["simulated_lengths"] == "recorded"
        assert f"(measured/predicted {ph['output_tok_s'] / r['simulated_output_tok_s']:.2f})" in html


def test_csv_has_one_row_per_request(run_dir):
    rows = list(csv.DictReader((run_dir / "requests.csv").open()))
    lines = [json.loads(x) for x in (run_dir / "requests.jsonl").read_text().splitlines()]
    reqs = [r for r in lines if r["type"] == "request"]
    assert len(rows) == len(reqs) == 16
    by_index = {int(r["index"]): r for r in rows}
    for r in reqs:
        row = by_index[r["index"]]
        assert row["error"] == (r["error"] or "") and row["phase"] == r["phase"]
        if r["ok"]:
            assert float(row["ttft_s"]) == pytest.approx(r["ttft_s"]) and int(row["itl_n"]) == len(r["itl_s"])


def test_goodput_and_slo_in_summary(run_dir):
    s = json.loads((run_dir / "summary.json").read_text())
    for ph in s["phases"]:
        good = sum(1 for r in map(json.loads, (run_dir / "requests.jsonl").read_text().splitlines())
                   if r.get("phase") == ph["phase"] and r.get("ok") and r["ttft_s"] <= 0.5 and r["tpot_s"] <= 0.2)
        assert ph["goodput_rps"] == pytest.approx(good / ph["wall_s"])
        assert ph["slo"]["share_all"] == pytest.approx(good / ph["requests"])


def test_user_text_in_the_report_is_escaped(server, tmp_path):
    out = tmp_path / "run"
    main(["bench-server", server.url, "--model", "<script>alert(1)</script>", "--requests", "1", "--warmup", "0",
          "-o", str(out), "--quiet"])
    html = (out / "report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_compare_overlays_runs(server, tmp_path, run_dir, capsys):
    other = tmp_path / "other"
    assert main(["bench-server", server.url, "--model", "ok", "--concurrency", "1,2", "--requests", "4", "--warmup", "0",
                 "-o", str(other), "--quiet"]) == 0
    capsys.readouterr()
    page = tmp_path / "cmp.html"
    assert main(["bench-server", "--compare", str(run_dir), str(other), "-o", str(page)]) == 0
    html = page.read_text()
    assert html.count("<svg") == 4 and "run" in html and "other" in html
    out = capsys.readouterr().out
    assert "other: best" in out and "run: best" in out
    assert main(["bench-server", "--compare", str(tmp_path / "nope")]) == 2


def test_summarize_rebuilds_the_report_and_csv(run_dir):
    (run_dir / "report.html").unlink()
    (run_dir / "requests.csv").unlink()
    assert main(["bench-server", "--summarize", str(run_dir), "--json"]) == 3
    assert (run_dir / "report.html").exists() and (run_dir / "requests.csv").exists()
