"""One request against a well-behaved fake server with known timing (127.0.0.1, started here)."""

import pytest

from serverbench_fake import GAP_S, N_TOKENS, TTFT_S, FakeServer, one
from tokspeed.serverbench.apis import endpoint_url

pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def check_invariants(r, n):
    assert r["ok"], r
    assert 0 < r["ttft_s"] <= r["e2e_s"]
    assert sum(r["itl_s"]) == pytest.approx(r["decode_s"], abs=1e-9)
    assert r["ttft_s"] + r["decode_s"] <= r["e2e_s"]
    assert r["tpot_s"] == pytest.approx(r["decode_s"] / (n - 1))


def test_well_behaved_stream_timing_and_usage(server):
    r = one(server.url, "ok")
    n = N_TOKENS
    check_invariants(r, n)
    assert r["output_tokens"] == n and r["output_tokens_source"] == "usage"
    assert r["prompt_tokens"] == 11  # what the fake's usage says
    assert r["chunks"] == n and len(r["itl_s"]) == n - 1 and r["itl_complete"]
    # the server sleeps TTFT_S before the first token and GAP_S between tokens: lower bounds
    assert r["ttft_s"] >= TTFT_S
    assert r["e2e_s"] >= TTFT_S + (n - 1) * GAP_S
    assert r["decode_s"] >= 0.5 * (n - 1) * GAP_S
    assert server.bodies[-1]["stream_options"] == {"include_usage": True}
    assert server.paths[-1] == "/v1/completions"


def test_chunks_carrying_two_tokens_are_counted_from_usage(server):
    r = one(server.url, "multi")
    check_invariants(r, N_TOKENS)
    assert r["output_tokens"] == N_TOKENS and r["chunks"] == N_TOKENS // 2
    assert not r["itl_complete"]  # gaps inside a chunk are unknown without per-chunk counts


def test_continuous_usage_gives_each_chunks_token_count(server):
    r = one(server.url, "continuous")
    check_invariants(r, N_TOKENS)
    # chunks of 1, 2, 3, 1, 1(of 2 left after 7) -> tokens 8; gaps: k-1 zeros after each chunk's gap
    assert r["output_tokens"] == N_TOKENS and r["itl_complete"]
    assert len(r["itl_s"]) == N_TOKENS - 1
    assert r["itl_s"].count(0.0) == (1 - 1) + (2 - 1) + (3 - 1) + (1 - 1) + (1 - 1)


def test_without_usage_counts_one_token_per_text_chunk(server):
    r = one(server.url, "ok", stream_usage=False)
    assert r["output_tokens"] == N_TOKENS and r["output_tokens_source"] == "chunks" and r["prompt_tokens"] is None


def test_chat_api_path(server):
    r = one(server.url + "/v1", "ok", api="openai-chat")
    assert server.paths[-1] == "/v1/chat/completions"
    assert server.bodies[-1]["messages"] == [{"role": "user", "content": "hello"}]
    check_invariants(r, N_TOKENS)
    assert r["output_tokens"] == N_TOKENS and r["chunks"] == N_TOKENS


def test_ollama_counts_and_server_timings(server):
    r = one(server.url, "ollama", api="ollama")
    assert server.paths[-1] == "/api/generate"
    check_invariants(r, N_TOKENS)
    assert r["output_tokens"] == N_TOKENS and r["output_tokens_source"] == "ollama" and r["prompt_tokens"] == 9
    # eval_count / eval_duration = 8 / 0.2 s; prompt 9 / 0.03 s
    assert r["server_timings"]["decode_tok_s"] == pytest.approx(40.0)
    assert r["server_timings"]["prefill_tok_s"] == pytest.approx(300.0)


def test_llama_cpp_timings_give_counts_when_there_is_no_usage(server):
    r = one(server.url, "llamacpp")
    assert r["ok"] and r["chunks"] == 4
    assert r["output_tokens"] == 8 and r["output_tokens_source"] == "llama.cpp" and r["prompt_tokens"] == 5
    assert r["server_timings"]["decode_tok_s"] == 200.0 and r["server_timings"]["prefill_tok_s"] == 500.0
    assert r["tpot_s"] == pytest.approx(r["decode_s"] / 7)


def test_api_key_goes_in_the_header_and_is_redacted_from_error_details(server):
    r = one(server.url, "http500", headers={"Authorization": "Bearer sk-secret-123"}, secret="sk-secret-123")
    assert server.headers[-1]["authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in str(r)


def test_endpoint_urls():
    assert endpoint_url("http://h:1", "openai-completions") == "http://h:1/v1/completions"
    assert endpoint_url("http://h:1/v1/", "openai-chat") == "http://h:1/v1/chat/completions"
    assert endpoint_url("http://h:1/v1/completions", "openai-completions") == "http://h:1/v1/completions"
    assert endpoint_url("http://h:11434", "ollama") == "http://h:11434/api/generate"


def test_a_tokenizer_counts_the_tokens_inside_each_chunk(server, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokspeed.serverbench.tokens import load_token_counter

    # character-level BPE without merges: every character is one token
    vocab = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    tok.save(str(tmp_path / "tokenizer.json"))
    count = load_token_counter(tmp_path / "tokenizer.json")
    assert count("tt") == 2
    r = one(server.url, "multi", stream_usage=False, count_tokens=count)  # chunks of "tt", no usage
    assert r["output_tokens"] == N_TOKENS and r["output_tokens_source"] == "tokenizer"
    assert r["itl_complete"] and len(r["itl_s"]) == N_TOKENS - 1
    assert r["itl_s"][0] == 0.0 and r["itl_s"][2] == 0.0  # the second token of each chunk arrives with the first
