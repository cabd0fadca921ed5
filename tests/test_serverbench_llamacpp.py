"""bench-server against a REAL llama.cpp server (llama-cpp-python) serving a tiny GGUF written here.

The GGUF (see serverbench_gguf.py) has a byte-level vocab and weights steered so that every
generated token is one printable ASCII character and EOS never comes: a request for N tokens
streams exactly N one-character chunks. Token counts recorded by bench-server are checked against
the server's own ``usage`` (asked again without streaming, same prompt, greedy), and the prompt
length against the count worked out by hand from the vocab.
"""

import json
import sys

import pytest

from serverbench_gguf import expected_prompt_tokens, free_port, running_server, write_tiny_llama

pytestmark = pytest.mark.slow

for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings", "httpx"):
    pytest.importorskip(mod, reason="llama-cpp-python[server] is optional (extra llamacpp); llama.cpp's own "
                                    "llama-server is tested in test_serverbench_llamaserver.py")

MAX_TOKENS = 12
PROMPT_TOKENS = 16
LEVELS = (1, 2)
REQUESTS = 3
WARMUP = 1
SEED = 7


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("llamacpp")
    model = write_tiny_llama(d / "tiny.gguf")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "512", "--n_threads", "1",
           "--interrupt_requests", "False"]      # queue concurrent requests instead of cutting the running stream short
    with running_server(cmd, url, "/v1/models", d / "server.log", "llama_cpp.server", 90):
        yield url


def regenerate_prompts(n):
    """The prompts the run sent, drawn again from the same seeded plan (jobs come in index order)."""
    from tokspeed.serverbench.loadgen import LoadGenerator, LoadPlan
    from tokspeed.serverbench.workload import Dist

    plan = LoadPlan(list(LEVELS), REQUESTS, None, None, WARMUP, Dist(PROMPT_TOKENS, PROMPT_TOKENS),
                    Dist(MAX_TOKENS, MAX_TOKENS), seed=SEED)
    gen = LoadGenerator(plan, None, None)
    return [gen.next_job({}) for _ in range(n)]


def test_bench_a_real_llama_cpp_server(llama_server, tmp_path):
    import httpx

    from tokspeed.cli.main import main

    out = tmp_path / "run"
    rc = main(["bench-server", llama_server, "--model", "tiny", "--concurrency", ",".join(map(str, LEVELS)),
               "--requests", str(REQUESTS), "--warmup", str(WARMUP), "--max-tokens", str(MAX_TOKENS),
               "--prompt-tokens", str(PROMPT_TOKENS), "--seed", str(SEED), "-o", str(out), "--quiet"])
    assert rc == 0
    recs = [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]
    assert len(recs) == WARMUP + REQUESTS * len(LEVELS) and all(r["ok"] for r in recs)

    jobs = regenerate_prompts(len(recs))
    for r in recs:
        job = jobs[r["index"]]
        # the server's own count for the same prompt, greedy, without streaming
        usage = httpx.post(llama_server + "/v1/completions", trust_env=False, timeout=60, json={
            "model": "tiny", "prompt": job.prompt, "max_tokens": job.max_tokens, "temperature": 0, "seed": SEED,
        }).json()["usage"]
        assert r["output_tokens"] == usage["completion_tokens"] == MAX_TOKENS
        assert usage["prompt_tokens"] == expected_prompt_tokens(job.prompt)
        # llama-cpp-python streams no usage: tokens were counted one per chunk, and here that is exact
        assert r["output_tokens_source"] == "chunks" and r["chunks"] == MAX_TOKENS and r["itl_complete"]
        assert 0 < r["ttft_s"] <= r["e2e_s"]
        assert len(r["itl_s"]) == MAX_TOKENS - 1
        assert sum(r["itl_s"]) == pytest.approx(r["decode_s"], abs=1e-9)
        assert r["ttft_s"] + r["decode_s"] <= r["e2e_s"]
        assert r["tpot_s"] == pytest.approx(r["decode_s"] / (MAX_TOKENS - 1))

    s = json.loads((out / "summary.json").read_text())
    assert [p["concurrency"] for p in s["phases"]] == list(LEVELS) and s["failed"] == 0
    for p in s["phases"]:
        assert p["output_tokens"] == REQUESTS * MAX_TOKENS
        assert p["output_tok_s"] == pytest.approx(p["output_tokens"] / p["wall_s"])


def test_chat_api_against_llama_cpp(llama_server, tmp_path):
    from tokspeed.cli.main import main

    out = tmp_path / "chat"
    rc = main(["bench-server", llama_server, "--model", "tiny", "--api", "openai-chat", "--requests", "2",
               "--warmup", "0", "--max-tokens", "6", "--prompt-tokens", "8", "-o", str(out), "--quiet"])
    recs = [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]
    assert rc == 0 and all(r["ok"] and r["output_tokens"] == 6 for r in recs)
