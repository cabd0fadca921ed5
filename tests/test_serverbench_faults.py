"""Faults from a local misbehaving server: each becomes the right error kind, the run finishes,
every request is on disk, and the exit code says some failed."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from serverbench_fake import FakeServer, one
from tokspeed.cli.main import main
from tokspeed.serverbench.client import Timeouts

pytest.importorskip("httpx")

SHORT = Timeouts(connect_s=1, first_token_s=0.5, idle_s=0.3, total_s=5)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


@pytest.mark.parametrize("mode, kind", [
    ("die", "disconnected"),  # connection dropped mid-body after 3 tokens
    ("close_before", "disconnected"),  # closed before the first byte of a response
    ("no_done", "disconnected"),  # clean end of body, but no [DONE] / finish_reason
    ("http500", "http_5xx"),
    ("http429", "http_429"),
    ("http404", "http_4xx"),
    ("malformed", "malformed_stream"),
    ("stall_first", "timeout_first_token"),  # headers, then silence
    ("stall_headers", "timeout_first_token"),  # not even headers
    ("stall_mid", "timeout_idle"),  # two tokens, then silence
    ("stream_error", "stream_error"),  # {"error": ...} inside the stream
    ("truncated", "truncated"),  # [DONE] without any finish_reason
])
def test_each_fault_is_recorded_as_its_kind(server, mode, kind):
    t = time.perf_counter()
    r = one(server.url, mode, timeouts=SHORT)
    assert time.perf_counter() - t < 3  # the timeouts, not the 30 s stall, ended it
    assert not r["ok"] and r["error"] == kind, r
    assert r["error_detail"]
    json.dumps(r, allow_nan=False)


def test_what_arrived_before_a_fault_is_kept(server):
    r = one(server.url, "die", timeouts=SHORT)
    assert r["chunks"] == 3 and r["ttft_s"] is not None and len(r["itl_s"]) == 2
    r = one(server.url, "stall_mid", timeouts=SHORT)
    assert r["chunks"] == 2 and r["e2e_s"] >= SHORT.idle_s


def test_http_error_status_and_body_are_kept(server):
    r = one(server.url, "http429", timeouts=SHORT)
    assert r["http_status"] == 429 and "fake 429" in r["error_detail"]


def test_nothing_listening_is_a_connect_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        r = one(f"http://127.0.0.1:{port}", "ok", timeouts=SHORT)
    assert r["error"] == "connect"


def test_an_unreachable_server_stops_the_run_early(tmp_path):
    from tokspeed.serverbench.bench import MAX_CONSECUTIVE_FAILURES as UNREACHABLE_AFTER

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        out = tmp_path / "run"
        rc = main(["bench-server", f"http://127.0.0.1:{port}", "--model", "m", "--requests", "500", "--concurrency", "2",
                   "--warmup", "0", "-o", str(out), "--quiet"])
    assert rc == 3
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    reqs = [r for r in lines if r["type"] == "request"]
    assert UNREACHABLE_AFTER <= len(reqs) <= UNREACHABLE_AFTER + 2  # + what was in flight
    assert lines[-1]["type"] == "end" and f"{UNREACHABLE_AFTER} failures in a row (connect" in lines[-1]["aborted"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] and "running?" in summary["aborted"] and summary["errors"]["connect"] >= UNREACHABLE_AFTER


MODES = ["ok", "die", "http500", "ok", "http429", "malformed", "stall_first", "stall_mid", "close_before", "ok"]


def test_a_run_with_faults_finishes_records_everything_and_exits_3(server, tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["bench-server", server.url, "--model", "mix:" + ",".join(MODES), "--requests", str(len(MODES)),
               "--concurrency", "1", "--warmup", "0", "--first-token-timeout", "0.5", "--idle-timeout", "0.3",
               "-o", str(out), "--quiet", "--json"])
    assert rc == 3
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "run" and len(lines) == 1 + len(MODES) + 1
    end = lines[-1]
    assert {k: end[k] for k in ("type", "interrupted", "aborted", "requests")} == {
        "type": "end", "interrupted": False, "aborted": None, "requests": len(MODES)}
    assert end["server"]["build_info"] == "b1234-fake"  # the engine version, read from llama.cpp-style /props
    assert set(end["phases"]) == {"c=1"} and end["phases"]["c=1"]["client_cpu_s"] >= 0
    got = {r["index"]: r["error"] for r in lines[1:-1]}
    expected = {"ok": None, "die": "disconnected", "http500": "http_5xx", "http429": "http_429",
                "malformed": "malformed_stream", "stall_first": "timeout_first_token", "stall_mid": "timeout_idle",
                "close_before": "disconnected"}
    assert got == {i: expected[m] for i, m in enumerate(MODES)}  # concurrency 1: request i got mode i
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(capsys.readouterr().out)
    assert summary["ok"] == 3 and summary["failed"] == 7
    assert summary["errors"] == {"disconnected": 2, "http_5xx": 1, "http_429": 1, "malformed_stream": 1,
                                 "timeout_first_token": 1, "timeout_idle": 1}


def test_ctrl_c_keeps_every_record_and_writes_a_partial_summary(server, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "tokspeed", "bench-server", server.url, "--model", "slow",
                          "--requests", "50", "--concurrency", "2", "--warmup", "0", "--max-tokens", "8",
                          "-o", str(out), "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        jsonl = out / "requests.jsonl"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait for run line + 2 finished requests
            if jsonl.exists() and len(jsonl.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        rc = p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 130, p.stderr.read()
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]  # every line whole
    reqs = [r for r in lines if r["type"] == "request"]
    assert len(reqs) < 50
    assert sum(r["ok"] for r in reqs) >= 2
    assert any(r["error"] == "cancelled" for r in reqs)  # the ones in flight at Ctrl-C
    assert lines[-1]["type"] == "end" and lines[-1]["interrupted"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is True and summary["requests"] == len(reqs)
    assert summary["failed"] == 0 and summary["cancelled"] >= 1
    assert main(["bench-server", "--summarize", str(out), "--json"]) == 0  # rebuilt: still partial
    assert json.loads((out / "summary.json").read_text())["partial"] is True
