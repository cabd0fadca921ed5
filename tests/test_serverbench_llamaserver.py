"""bench-server against llama.cpp's own multi-slot ``llama-server`` (4 parallel slots, continuous
batching) serving a tiny random-weight GGUF written here (see serverbench_gguf.py: every generated
token is one printable character and EOS never comes, so a request for N tokens streams N tokens).

The binary is built once by ``scripts/build_llama_server.sh`` (scripts/test.sh runs it) from the
llama.cpp source of the version pinned in scripts/llama_cpp_version.txt (the llama-cpp-python source package
vendors it), and cached outside the clone. A sweep must find a saturation point; the recorded token counts are checked against the
server's per-request ``timings`` (exactly) and its ``/metrics`` counter (up to the requests a
slot has not flushed into it yet), and the prompt length the server
saw against the count worked out by hand from the byte-level vocabulary.
"""

import json
import re
from pathlib import Path

import pytest

from progress import llama_cpp_binary
from serverbench_gguf import expected_prompt_tokens, free_port, running_server, write_tiny_llama

pytestmark = pytest.mark.slow
httpx = pytest.importorskip("httpx")
pytest.importorskip("gguf")

SLOTS = 4
MAX_TOKENS = 24
PROMPT_TOKENS = 16
SEED = 11


def llama_server_binary() -> Path | None:
    return llama_cpp_binary("llama-server")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    binary = llama_server_binary()
    if binary is None:
        pytest.skip("no llama-server: run bash scripts/build_llama_server.sh (scripts/test.sh does)")
    d = tmp_path_factory.mktemp("llamaserver")
    model = write_tiny_llama(d / "tiny.gguf")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", str(SLOTS),
           "--cont-batching", "-c", str(SLOTS * 256), "-t", "2", "--metrics", "--no-webui"]
    with running_server(cmd, url, "/health", d / "server.log", "llama-server", 120):
        yield url


def predicted_total(url: str) -> int:
    text = httpx.get(url + "/metrics", timeout=10, trust_env=False).text
    m = re.search(r"^llamacpp:tokens_predicted_total\s+([0-9.e+]+)", text, re.M)
    assert m, text[:500]
    return int(float(m.group(1)))


def test_sweep_saturates_and_token_counts_match_the_servers_metrics(llama_server, tmp_path):
    from tokspeed.cli.main import main
    from tokspeed.serverbench.loadgen import LoadGenerator, LoadPlan
    from tokspeed.serverbench.workload import Dist

    before = predicted_total(llama_server)
    out = tmp_path / "sweep"
    rc = main(["bench-server", llama_server, "--model", "tiny", "--sweep", "--concurrency", "1,2,4,8,16,32",
               "--sweep-tolerance", "10", "--requests", "12", "--warmup", "1", "--max-tokens", str(MAX_TOKENS),
               "--prompt-tokens", str(PROMPT_TOKENS), "--seed", str(SEED), "--ignore-eos", "-o", str(out), "--quiet"])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    recs = [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]
    assert all(r["ok"] for r in recs)

    # a saturation point, found by the sweep before its last level: with 4 slots the knee is at 4 (or, when a
    # loaded host slowed level 4 by more than the tolerance, at 8); level 32 is there so that one noisy level
    # cannot carry the sweep to its end (CI at b6a3ecf: "max_load" after 1,2,4,8,16)
    sat = s["saturation"]
    assert sat["limit"] == "throughput" and sat["concurrency"] <= SLOTS * 2
    levels = [p["concurrency"] for p in s["phases"]]
    assert levels.index(sat["concurrency"]) == len(levels) - 2  # the sweep stopped at the level after the knee

    # the server's own counter: llama-server adds a slot's generated tokens to tokens_predicted_total
    # when the slot is next reset (reused), so the requests last served by each slot may not be in it yet
    unflushed = sum(r["output_tokens"] for r in recs) - (predicted_total(llama_server) - before)
    assert 0 <= unflushed <= SLOTS * MAX_TOKENS and unflushed % MAX_TOKENS == 0
    plan = LoadPlan([1], 1, None, None, 0, Dist(PROMPT_TOKENS, PROMPT_TOKENS), Dist(MAX_TOKENS, MAX_TOKENS), seed=SEED)
    gen = LoadGenerator(plan, None, None)
    jobs = [gen.next_job({}) for _ in range(len(recs))]  # the prompts the run sent (same seeded draws, index order)
    for r in recs:
        assert r["output_tokens"] == MAX_TOKENS and r["output_tokens_source"] == "usage"
        assert r["server_timings"]["output_tokens"] == MAX_TOKENS
        assert r["prompt_tokens"] == expected_prompt_tokens(jobs[r["index"]].prompt)  # what the server saw
    assert s["prompt_tokens_verified"] == "server"
    assert s["server"]["engine"] == "llama.cpp" and s["server"].get("total_slots") == SLOTS
    assert (out / "report.html").exists()


def test_rate_list_against_llama_server(llama_server, tmp_path):
    from tokspeed.cli.main import main

    out = tmp_path / "rate"
    rc = main(["bench-server", llama_server, "--model", "tiny", "--rate", "4,8", "--requests", "6", "--warmup", "0",
               "--max-tokens", "8", "--prompt-tokens", "8", "--ignore-eos", "--slo-ttft-ms", "5000", "-o", str(out),
               "--quiet"])
    s = json.loads((out / "summary.json").read_text())
    assert rc == 0 and [p["rate_rps"] for p in s["phases"]] == [4.0, 8.0]
    assert all(p["ok"] == 6 and p["goodput_rps"] > 0 for p in s["phases"])
