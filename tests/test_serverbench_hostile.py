"""bench-server bounds time and memory whatever the server does (issue 10): a stream that never ends,
a line or an event that never ends, NaN timings and negative counts, a server that dies after
successes, an HTML page instead of an LLM endpoint, Ctrl-C; and refuses bad arguments before it
creates any file. Each run is a subprocess with a hard time limit, so a hang fails the test instead
of hanging the suite."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from serverbench_fake import FakeServer, one
from tokspeed.serverbench.client import Timeouts

pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 60  # hard limit on any one subprocess: far above what a correct run takes (a few seconds)


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def cli(*args, timeout=LIMIT_S):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "tokspeed", "bench-server", *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    return p, time.perf_counter() - t


def records(out):
    return [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]


def test_request_timeout_fires_against_a_server_that_streams_forever(server, tmp_path):
    """On Python 3.11 an outer asyncio.wait_for never fired here: the run never ended."""
    out = tmp_path / "run"
    p, took = cli(server.url, "--model", "forever", "--requests", "2", "--warmup", "0", "--request-timeout", "1.5",
                  "-o", out, "--quiet")
    assert p.returncode == 3, p.stderr
    recs = records(out)
    assert [r["error"] for r in recs] == ["timeout_total", "timeout_total"]
    assert all(1.5 <= r["e2e_s"] < 5 for r in recs)
    assert took < 30


def flood_then_ok(server, tmp_path, mode: str, request_timeout: float) -> list[dict]:
    """Two requests, the first of them flooded by ``mode``: the run fails (exit 3); the records in order."""
    out = tmp_path / "run"
    p, _ = cli(server.url, "--model", f"mix:{mode},ok", "--requests", "2", "--warmup", "0",
               "--request-timeout", request_timeout, "-o", out, "--quiet")
    assert p.returncode == 3, p.stderr
    recs = sorted(records(out), key=lambda r: r["index"])
    assert recs[0]["chunks"] == 1  # the token before the flood is kept
    assert recs[1]["ok"]  # the next request ran normally
    return recs


def test_an_endless_event_is_capped_and_the_run_moves_on(server, tmp_path):
    recs = flood_then_ok(server, tmp_path, "huge_event", 40)
    assert recs[0]["error"] == "malformed_stream" and "an event longer than 8 MiB" in recs[0]["error_detail"]
    assert recs[0]["e2e_s"] < 30  # stopped by the cap, not by the 40 s request timeout


def test_an_endless_line_is_dropped_unheld_until_the_request_timeout(server, tmp_path):
    """A line that never ends is dropped as it streams (never held past 4 MiB); the request timeout ends it."""
    recs = flood_then_ok(server, tmp_path, "huge_line", 4)
    assert recs[0]["error"] == "timeout_total" and recs[0]["sse_lines_dropped"] == 1
    assert recs[0]["sse_bytes_dropped"] > 4 * 2**20 and recs[1]["sse_lines_dropped"] == 0
    assert 4 <= recs[0]["e2e_s"] < 10


@pytest.mark.parametrize("mode", ["nan_timings", "negative_usage"])
def test_nan_timings_and_negative_counts_are_malformed_not_fatal(server, tmp_path, mode):
    out = tmp_path / "run"
    p, _ = cli(server.url, "--model", f"mix:{mode},ok", "--requests", "4", "--warmup", "0", "-o", out, "--quiet",
               "--json")
    assert p.returncode == 3, p.stderr
    assert "Traceback" not in p.stderr
    recs = sorted(records(out), key=lambda r: r["index"])
    assert len(recs) == 4  # no record lost
    assert [r["error"] for r in recs] == ["malformed_stream", None] * 2
    assert "impossible value" in recs[0]["error_detail"]
    for r in recs:  # the impossible values were dropped, never written
        assert (r.get("server_timings") or {}).get("decode_tok_s") is None
        assert r["output_tokens"] is None or r["output_tokens"] >= 0
    summary = json.loads(p.stdout)
    assert summary["errors"] == {"malformed_stream": 2} and summary["ok"] == 2


def test_nan_in_a_record_is_written_sanitized_not_lost(tmp_path):
    from tokspeed.serverbench.record import Recorder, read_jsonl

    rec = Recorder(tmp_path, {"model": "m"})
    written = rec.write({"type": "request", "index": 0, "ttft_s": float("nan"), "itl_s": [0.1, float("inf")]})
    rec.close()
    assert written["ttft_s"] is None and written["itl_s"] == [0.1, None] and written["sanitized"]
    assert read_jsonl(tmp_path).requests == [written]


def test_a_server_that_dies_after_successes_is_given_up_on(server, tmp_path):
    """Two successes, then HTTP 500 forever: the old rule (connect failures before any success) never
    stopped this; one run sent 8,363 requests in 7 s."""
    out = tmp_path / "run"
    p, _ = cli(server.url, "--model", "mix:ok,ok," + ",".join(["http500"] * 40), "--requests", "40",
               "--warmup", "0", "--max-consecutive-failures", "5", "-o", out, "--quiet")
    assert p.returncode == 3, p.stderr
    recs = records(out)
    assert len(recs) == 2 + 5
    assert [r["error"] for r in recs] == [None, None] + ["http_5xx"] * 5
    summary = json.loads((out / "summary.json").read_text())
    assert "5 failures in a row (http_5xx 5)" in summary["aborted"] and summary["partial"]
    assert "stopped early" in p.stderr and "5 failures in a row" in p.stderr


def test_default_consecutive_failure_limit_is_20(server, tmp_path):
    out = tmp_path / "run"
    p, _ = cli(server.url, "--model", "http500", "--requests", "100", "--concurrency", "1", "--warmup", "0",
               "-o", out, "--quiet")
    assert p.returncode == 3 and len(records(out)) == 20


def test_every_answer_an_http_error_page_says_so(server, tmp_path):
    out = tmp_path / "run"
    p, _ = cli(server.url, "--model", "http404", "--requests", "3", "--warmup", "0", "-o", out, "--quiet")
    assert p.returncode == 3
    assert "is this an LLM endpoint?" in p.stderr and "HTTP 404 x3" in p.stderr
    assert "is this an LLM endpoint?" in json.loads((out / "summary.json").read_text())["hint"]


def test_an_html_page_with_status_200_is_malformed(server):
    r = one(server.url, "html", timeouts=Timeouts(connect_s=2, first_token_s=2, idle_s=1, total_s=5))
    assert r["error"] == "malformed_stream" and "HTML page" in r["error_detail"] and "nginx" in r["error_detail"]


def _wait_for_lines(path: Path, n: int, limit_s: float = 30) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)


@pytest.mark.parametrize("gaps", [[0], [0, 0.05], [0, 0.3], [0, 0.01, 0.01]])
def test_ctrl_c_prints_no_traceback_and_keeps_the_records(server, tmp_path, gaps):
    """Once or several times, at any moment: before, in the first version, a second press inside the
    event loop raised KeyboardInterrupt in a task (asyncio printed its traceback), and one during the
    summary printed 'Exception ignored ... KeyboardInterrupt'."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "tokspeed", "bench-server", server.url, "--model", "slow",
                          "--requests", "50", "--concurrency", "2", "--warmup", "0", "-o", str(out), "--quiet"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_lines(out / "requests.jsonl", 3)
        for gap in gaps:
            time.sleep(gap)
            p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=LIMIT_S)
    finally:
        if p.poll() is None:
            p.kill()
    # 130, or killed by the SIGINT itself (-2) when a press lands while the interpreter is already
    # shutting down: a shell shows 130 for both
    assert p.returncode in (130, -signal.SIGINT), err
    assert "Traceback" not in err and "Error" not in err, err
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]  # every line whole
    assert sum(1 for r in lines if r.get("ok")) >= 2
    assert lines[-1]["type"] == "end" and lines[-1]["interrupted"] is True
    assert json.loads((out / "summary.json").read_text())["partial"] is True


BAD_ARGS = [
    (["http://[::1", "--model", "m"], "Invalid IPv6 URL"),
    (["http://127.0.0.1:99999", "--model", "m"], "Port out of range"),
    (["http://127.0.0.1:8000", "--model", "m", "--duration", "nan"], "--duration must be a finite number"),
    (["http://127.0.0.1:8000", "--model", "m", "--request-timeout", "nan"], "--request-timeout must be a finite"),
    (["http://127.0.0.1:8000", "--model", "m", "--first-token-timeout", "inf"], "--first-token-timeout must be a finite"),
    (["http://127.0.0.1:8000", "--model", "m", "--rate", "inf"], "--rate must be a finite"),
    (["http://127.0.0.1:8000", "--model", "m", "--max-consecutive-failures", "0"], "--max-consecutive-failures"),
    (["http://127.0.0.1:8000", "--model", "m", "--temperature", "nan"], "--temperature"),
]


@pytest.mark.parametrize("argv, text", BAD_ARGS)
def test_bad_arguments_are_one_line_exit_2_and_create_no_file(tmp_path, argv, text):
    out = tmp_path / "run"
    p, took = cli(*argv, "-o", out, timeout=30)
    assert p.returncode == 2 and text in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert not out.exists()


def test_output_pointing_at_an_existing_file_is_refused(tmp_path):
    f = tmp_path / "afile"
    f.write_text("keep me")
    p, _ = cli("http://127.0.0.1:8000", "--model", "m", "-o", f, timeout=30)
    assert p.returncode == 2 and "is not a directory" in p.stderr and p.stderr.count("\n") == 1
    assert f.read_text() == "keep me"


def test_missing_httpx_is_said_before_any_file_is_created(tmp_path):
    """With the server extra missing, bench-server says what to install and writes nothing."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", "import sys, importlib.util\n"
                        "real = importlib.util.find_spec\n"
                        "importlib.util.find_spec = lambda n, *a: None if n == 'httpx' else real(n, *a)\n"
                        "from tokspeed.cli.main import main\n"
                        f"sys.exit(main(['bench-server', 'http://127.0.0.1:8000', '--model', 'm', '-o', {str(out)!r}]))"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "pip install 'tokspeed[server]'" in p.stderr, p.stderr
    assert not out.exists()


def test_a_run_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    """Every record of a requests.jsonl read back is held: a file someone sent bigger than MAX_RUN_FILE_BYTES is one
    line and exit 2, not gigabytes of memory (a sparse file: no disk used)."""
    import subprocess
    import sys

    from tokspeed.guard.limits import MAX_RUN_FILE_BYTES

    f = tmp_path / "requests.jsonl"
    with open(f, "wb") as out:
        out.truncate(MAX_RUN_FILE_BYTES + 1)
    r = subprocess.run([sys.executable, "-m", "tokspeed", "bench-server", "--summarize", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "over the 2 GiB a run file may have" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
