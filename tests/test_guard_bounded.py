"""Bounded by construction (tokspeed.guard.bounded, guard.limits): whatever a server, a hub or a file does,
memory stays under 400 MB and every wait has an end. The client runs in a subprocess; its own peak memory is
its own VmHWM, written at exit (getrusage would carry the forked test process's
high-water mark from before exec)."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hostile_server import HostileServer

pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parent.parent
MAX_RSS_MB = 400


LAST_RSS_MB = [0.0]      # the peak memory of the last client run by bench()
# The child reports its own peak at exit: VmHWM of its address space (/proc/self/status). getrusage's ru_maxrss
# (RUSAGE_CHILDREN, os.wait4, even RUSAGE_SELF) keeps the high-water mark of the forked test process from before
# exec, hundreds of MB late in a full test run.
PEAK_AT_EXIT = ("import atexit, runpy, sys\n"
                "out = sys.argv.pop(1)\n"
                "def peak():\n"
                "    with open('/proc/self/status') as f, open(out, 'w') as o:\n"
                "        o.write(next(x for x in f if x.startswith('VmHWM:')).split()[1])\n"
                "atexit.register(peak)\n"
                "sys.argv[0] = 'tokspeed'\n"
                "runpy.run_module('tokspeed', run_name='__main__', alter_sys=True)\n")


def run_measured(args: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """``python -m tokspeed ARGS`` (killed after ``timeout`` s), its own peak RSS kept in LAST_RSS_MB."""
    with tempfile.TemporaryDirectory() as d:
        peak = Path(d) / "peak_kb"
        p = subprocess.run([sys.executable, "-c", PEAK_AT_EXIT, str(peak), *args], env=env, capture_output=True,
                           text=True, timeout=timeout)
        LAST_RSS_MB[0] = int(peak.read_text()) / 1024 if peak.exists() else float("inf")
        return p


def bench(url, *args, timeout=90):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKSPEED_API_KEY": ""}
    t = time.perf_counter()
    p = run_measured(["bench-server", url, *map(str, args)], env, timeout)
    return p, time.perf_counter() - t


def child_rss_mb() -> float:
    return LAST_RSS_MB[0]


def one_line_error(p):
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr


def test_a_stream_past_request_timeout_is_cut_in_bounded_memory(tmp_path):
    """A server streaming valid chunks forever, each claiming a million tokens: 11 GB and still running
    after 80 s with --request-timeout 5."""
    out = tmp_path / "run"
    with HostileServer("none") as srv:
        p, took = bench(srv.url, "--model", "fast_forever", "--requests", "1", "--warmup", "0",
                        "--request-timeout", "3", "-o", out, "--quiet")
    assert p.returncode == 3, p.stderr
    line = [ln for ln in (out / "requests.jsonl").read_text().splitlines() if '"type":"request"' in ln][0]
    rec = json.loads(line)
    assert rec["error"] == "timeout_total" and 3 <= rec["e2e_s"] < 4.5
    assert rec["output_tokens"] >= 10**6 and rec["itl_capped"] and len(rec["itl_s"]) <= 32_768
    assert len(line) < 2 * 2**20                     # the record does not grow with the stream
    assert took < 30 and child_rss_mb() < MAX_RSS_MB


@pytest.mark.parametrize("props", ["huge", "drip"])
def test_props_too_big_or_too_slow_is_skipped_in_bounded_time_and_memory(tmp_path, props):
    """/props of 300 MB took 713 MB; /props dripping a byte a second never let the run start."""
    with HostileServer(props) as srv:
        p, took = bench(srv.url, "--model", "ok", "--requests", "1", "--warmup", "0", "-o", tmp_path / "run",
                        "--quiet")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["ok"] == 1
    assert took < 30 and child_rss_mb() < MAX_RSS_MB


def test_a_200_mb_line_is_dropped_at_the_cap(tmp_path):
    """A 200 MB line that never ends: dropped as it streams, the request cut by its timeout."""
    with HostileServer("none") as srv:
        p, took = bench(srv.url, "--model", "long_line", "--requests", "1", "--warmup", "0", "-o", tmp_path / "run",
                        "--request-timeout", "20", "--quiet")
    assert p.returncode == 3, p.stderr
    assert took < 30 and child_rss_mb() < MAX_RSS_MB


def test_a_200_mb_line_between_valid_chunks_is_dropped_and_the_request_failed(tmp_path):
    """One 200 MB line peaked the client at 1.1 GB; then it was dropped and the request counted ok, its
    tokens lost. Now it is dropped unheld (never more than the 4 MiB cap), the chunks after it are still
    read, and the request is a failure (malformed stream): the run ends partial, exit 3."""
    from tokspeed.serverbench.sse import MAX_LINE_BYTES

    out = tmp_path / "run"
    with HostileServer("none") as srv:
        p, took = bench(srv.url, "--model", "long_line_between", "--requests", "1", "--warmup", "0", "-o", out,
                        "--quiet")
    assert p.returncode == 3, p.stderr
    rec = [json.loads(ln) for ln in (out / "requests.jsonl").read_text().splitlines() if '"type":"request"' in ln][0]
    assert not rec["ok"] and rec["error"] == "malformed_stream" and "lost" in rec["error_detail"]
    assert rec["chunks"] == 4                                 # 1 before the line, 3 after it
    assert rec["sse_lines_dropped"] == 1 and rec["sse_bytes_dropped"] == len(b"data: ") + 200 * 2**20
    assert rec["malformed_lines"] == 0 and len(rec["itl_s"]) == 3
    assert json.loads((out / "summary.json").read_text())["sse_lines_dropped"] == 1
    assert took < 30 and child_rss_mb() < MAX_RSS_MB and MAX_LINE_BYTES < 200 * 2**20


@pytest.mark.parametrize("flag, value", [("--rate", "1e-300"), ("--slo-ttft-ms", "1e-321"), ("--slo-tpot-ms", "1e-321"),
                                         ("--request-timeout", "1e-321"), ("--max-duration", "5e-324")])
def test_tiny_rates_and_times_are_refused_not_run_forever_or_dropped(tmp_path, flag, value):
    """--rate 1e-300 slept forever; --slo-ttft-ms 1e-321 silently dropped the SLO (it rounds to 0 s)."""
    p, took = bench("http://127.0.0.1:9", "--model", "m", flag, value, "-o", tmp_path / "run", timeout=30)
    assert flag in one_line_error(p) and "at least" in p.stderr
    assert not (tmp_path / "run").exists()


def test_a_run_has_a_default_end(tmp_path):
    from tokspeed.cli.bench_server import DEFAULT_MAX_RUN_S

    with HostileServer("none") as srv:
        p, _ = bench(srv.url, "--model", "ok", "--requests", "1", "--warmup", "0", "-o", tmp_path / "run", "--quiet")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["run"]["max_run_s"] == DEFAULT_MAX_RUN_S == 86400


def test_a_2_gb_tokenizer_is_refused_before_reading(tmp_path):
    pytest.importorskip("tokenizers")
    big = tmp_path / "tokenizer.json"
    with open(big, "wb") as f:
        f.truncate(2 * 2**30)                          # sparse: no disk used
    p, took = bench("http://127.0.0.1:9", "--model", "m", "--tokenizer", big, "-o", tmp_path / "run", timeout=60)
    assert "larger than a tokenizer may be" in one_line_error(p)
    assert took < 20 and child_rss_mb() < MAX_RSS_MB


def test_prompt_files_nested_or_with_huge_fields(tmp_path):
    """JSONL nested 100,000 deep was a RecursionError; a 200 KB CSV field a csv.Error traceback."""
    from tokspeed.errors import UserError
    from tokspeed.serverbench.workload import read_prompt_file

    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"prompt": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(UserError, match="nested too deeply"):
        read_prompt_file(str(deep))
    wide = tmp_path / "wide.csv"
    wide.write_text('prompt\n"' + "x" * 200_000 + '"\nhello\n')
    assert [len(t) for t in read_prompt_file(str(wide))[0]] == [200_000, 5]      # a long prompt is fine
    huge = tmp_path / "huge.csv"
    huge.write_text('prompt\n"' + "x" * (5 * 2**20) + '"\n')
    with pytest.raises(UserError, match="at most 4 MiB"):
        read_prompt_file(str(huge))
    p, _ = bench("http://127.0.0.1:9", "--model", "m", "--prompts", deep, "-o", tmp_path / "run", timeout=60)
    assert "nested" in one_line_error(p)


def test_a_million_layers_is_refused_with_the_field_named(tmp_path):
    """A model claiming 10^6 layers took minutes and GBs (CLI or web upload)."""
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
           "num_attention_heads": 4, "num_hidden_layers": 10**6, "num_key_value_heads": 2, "vocab_size": 256}
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "tokspeed", "predict", str(f), "--hardware", "rtx-4090"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "n_layers 1,000,000 is beyond any real model" in one_line_error(p)
    assert time.perf_counter() - t < 20


@pytest.mark.parametrize("line, ok", [('{"type":"request","index":0,"ok":true,"ttft_s":Infinity,"e2e_s":1}', True),
                                      ('{"type":"request","index":0,"ok":true,"ttft_s":"fast","itl_s":"x",'
                                       '"phase":[1],"e2e_s":{"a":1},"output_tokens":"9"}', True)])
def test_summarize_a_run_file_with_wrong_types_or_infinity(tmp_path, line, ok):
    run = tmp_path / "run"
    run.mkdir()
    (run / "requests.jsonl").write_text('{"type":"run","model":"m","url":"http://x"}\n' + line + "\n")
    p, _ = bench("--summarize", run, "--json", timeout=60)
    assert "Traceback" not in p.stderr
    assert p.returncode in (0, 2, 3), p.stderr


def test_compare_summaries_with_wrong_types_or_infinity(tmp_path):
    for name, text in (("a", '{"phases": [{"load": "x", "stats": 5, "output_tok_s": "fast"}], "run": {}}'),
                       ("b", '{"phases": [{"concurrency": 1, "output_tok_s": Infinity}], "run": {}}'),
                       ("c", '{"phases": [1, 2], "run": {}}')):
        d = tmp_path / name
        d.mkdir()
        (d / "summary.json").write_text(text)
        p, _ = bench("--compare", d, d, "-o", tmp_path / "cmp.html", timeout=60)
        assert "Traceback" not in p.stderr
        assert p.returncode in (0, 2), p.stderr
        if p.returncode == 2:
            one_line_error(p)
