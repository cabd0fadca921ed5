"""The bench-server command line: user errors, caps, load shapes, the API key, --summarize."""

import json
import time

import pytest

from serverbench_fake import FakeServer
from tokspeed.cli.main import main

pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def bench(server, tmp_path, *extra, model="ok"):
    out = tmp_path / "run"
    rc = main(["bench-server", server.url, "--model", model, "-o", str(out), "--quiet", "--json", *extra])
    return rc, out


def records(out):
    return [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]


@pytest.mark.parametrize("argv, text", [
    (["bench-server", "--model", "m"], "needs the server URL"),
    (["bench-server", "http://127.0.0.1:1"], "needs --model"),
    (["bench-server", "ftp://x", "--model", "m"], "not an http(s) URL"),
    (["bench-server", "http://127.0.0.1:1", "--model", "m", "--concurrency", "1,x"], "--concurrency"),
    (["bench-server", "http://127.0.0.1:1", "--model", "m", "--concurrency", "0"], "--concurrency"),
    (["bench-server", "http://127.0.0.1:1", "--model", "m", "--max-tokens", "9-3"], "--max-tokens"),
    (["bench-server", "http://127.0.0.1:1", "--model", "m", "--requests", "-1"], "--requests"),
    (["bench-server", "--summarize", "/nonexistent/dir"], "no requests.jsonl"),
])
def test_user_errors_are_one_line_and_exit_2(argv, text, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1 and "Traceback" not in err


def test_all_ok_exits_0_and_sweeps_concurrency_with_a_warmup(server, tmp_path):
    rc, out = bench(server, tmp_path, "--concurrency", "1,2", "--requests", "4", "--warmup", "2")
    assert rc == 0
    recs = records(out)
    assert [r["phase"] for r in recs] == ["warm-up"] * 2 + ["c=1"] * 4 + ["c=2"] * 4
    s = json.loads((out / "summary.json").read_text())
    assert [p["phase"] for p in s["phases"]] == ["c=1", "c=2"] and s["warmup_requests"] == 2
    assert all(p["ok"] == 4 and p["stats"]["output_tokens"]["mean"] == 8 for p in s["phases"])


def test_default_request_count_is_max_10_or_4_per_worker(server, tmp_path):
    rc, out = bench(server, tmp_path, "--concurrency", "3", "--warmup", "0")
    assert rc == 0 and len(records(out)) == 12


def test_length_ranges_are_drawn_within_bounds(server, tmp_path):
    rc, out = bench(server, tmp_path, "--requests", "10", "--max-tokens", "2-5", "--prompt-tokens", "10-20", "--warmup", "0")
    recs = records(out)
    assert {r["max_tokens"] for r in recs} <= set(range(2, 6))
    assert all(10 <= r["target_prompt_tokens"] <= 20 for r in recs)
    assert all(r["output_tokens"] == r["max_tokens"] for r in recs)  # the fake honours max_tokens
    assert len({b["prompt"] for b in server.bodies[-10:]}) == 10  # no two prompts share a prefix


def test_duration_bounds_a_phase(server, tmp_path):
    t = time.perf_counter()
    rc, out = bench(server, tmp_path, "--duration", "0.5", "--warmup", "0")
    # one request takes >= 0.05 + 7 x 0.02 = 0.19 s, so 0.5 s starts 2 or 3 and the last runs to its end
    assert rc == 0 and 1 <= len(records(out)) <= 4 and time.perf_counter() - t < 5


def test_poisson_rate_phase(server, tmp_path):
    rc, out = bench(server, tmp_path, "--rate", "20", "--requests", "6", "--concurrency", "4", "--warmup", "0")
    recs = records(out)
    assert rc == 0 and len(recs) == 6 and {r["phase"] for r in recs} == {"rate=20"}
    starts = sorted(r["start_s"] for r in recs)
    assert starts == sorted(starts) and all("queued_s" in r for r in recs)


def test_caps_are_applied_and_said(server, tmp_path, capsys):
    rc, out = bench(server, tmp_path, "--requests", "2", "--warmup", "0", "--max-tokens", "99999999")
    assert "capped" in capsys.readouterr().err
    run = json.loads((out / "requests.jsonl").read_text().splitlines()[0])
    assert run["max_tokens"] == "32768" and run["notes"]


def test_api_key_from_env_is_sent_but_never_written(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOKSPEED_API_KEY", "sk-test-SECRET")
    rc, out = bench(server, tmp_path, "--requests", "1", "--warmup", "0")
    assert server.headers[-1]["authorization"] == "Bearer sk-test-SECRET"
    captured = capsys.readouterr()
    for text in ((out / "requests.jsonl").read_text(), (out / "summary.json").read_text(), captured.out, captured.err):
        assert "SECRET" not in text
    assert json.loads((out / "summary.json").read_text())["run"]["api_key"] == "from $TOKSPEED_API_KEY"


def test_summarize_rebuilds_the_same_summary(server, tmp_path, capsys):
    rc, out = bench(server, tmp_path, "--requests", "3", model="mix:ok,http500,ok")
    first = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()
    capsys.readouterr()
    assert main(["bench-server", "--summarize", str(out), "--json"]) == 3
    again = json.loads(capsys.readouterr().out)
    assert again["phases"] == first["phases"] and again["errors"] == first["errors"] == {"http_5xx": 1}
    assert (out / "summary.json").exists()


def test_existing_run_directory_is_not_overwritten(server, tmp_path):
    bench(server, tmp_path, "--requests", "1", "--warmup", "0")
    assert bench(server, tmp_path, "--requests", "1", "--warmup", "0")[0] == 2
