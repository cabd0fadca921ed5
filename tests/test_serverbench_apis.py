"""Reading one chunk of each wire format, and what tokspeed sends."""

from tokspeed.serverbench.apis import read_chunk, redact_url, request_body


def test_chat_role_only_chunk_carries_no_text_and_reasoning_counts():
    assert read_chunk("openai-chat", {"choices": [{"delta": {"role": "assistant", "content": ""}}]}).text == ""
    c = read_chunk("openai-chat", {"choices": [{"delta": {"reasoning_content": "hm"}, "finish_reason": None}]})
    assert c.text == "hm"


def test_usage_only_final_chunk():
    c = read_chunk("openai-completions", {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}})
    assert c.text == "" and c.usage["completion_tokens"] == 5


def test_error_inside_the_stream():
    assert read_chunk("openai-chat", {"error": {"message": "boom"}}).error == "boom"
    assert read_chunk("ollama", {"error": "model not found"}).error == "model not found"


def test_ollama_final_line_counts_and_rates():
    c = read_chunk("ollama", {"response": "", "done": True, "done_reason": "stop", "eval_count": 100,
                              "eval_duration": 2_000_000_000, "prompt_eval_count": 50, "prompt_eval_duration": 100_000_000})
    assert c.done and c.finish_reason == "stop" and c.usage == {"prompt_tokens": 50, "completion_tokens": 100}
    assert c.timings["decode_tok_s"] == 50.0 and c.timings["prefill_tok_s"] == 500.0  # 100/2 s, 50/0.1 s


def test_bodies():
    b = request_body("openai-completions", "m", "p", 7, temperature=0, seed=1, ignore_eos=True, stream_usage=True)
    assert b == {"model": "m", "prompt": "p", "max_tokens": 7, "stream": True, "stream_options": {"include_usage": True},
                 "temperature": 0, "seed": 1, "ignore_eos": True}
    o = request_body("ollama", "m", "p", 7, temperature=None, seed=None, ignore_eos=False, stream_usage=True)
    assert o == {"model": "m", "prompt": "p", "stream": True, "options": {"num_predict": 7}}


def test_redacted_url_drops_credentials_and_query():
    assert redact_url("https://user:pw@host:8443/v1/completions?key=abc") == "https://host:8443/v1/completions"
