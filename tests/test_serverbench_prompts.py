"""Real prompts (issue 15): JSONL/CSV prompt files, chat transcripts played turn by turn with the
server's own answers sent back (OpenAI chat and Ollama /api/chat), a shared prefix, synthetic prompts
cut to an exact token count with the model's tokenizer (never inside a multi-byte character), and
the prompt length the server saw: verified, counted here, or said to be unverified."""

import json

import pytest

from serverbench_fake import FakeServer
from tokspeed.cli.main import main
from tokspeed.serverbench.workload import cut_to_tokens, read_prompt_file

pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def bench(server, tmp_path, *extra, model="ok", name="run"):
    out = tmp_path / name
    rc = main(["bench-server", server.url, "--model", model, "-o", str(out), "--quiet", "--warmup", "0", *extra])
    return rc, out


def records(out):
    return [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]


def byte_tokenizer(path):
    """A byte-level BPE without merges and without BOS: one token per UTF-8 byte (a Korean syllable is 3)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(alphabet))}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(path))
    return path


def test_cut_to_tokens_hits_exact_counts_and_never_splits_a_character():
    count = lambda t: len(t.encode("utf-8"))  # noqa: E731  -- one token per byte
    text = "가나 다라 hello 마바사"  # Korean syllables are 3 bytes each
    assert cut_to_tokens(text, 7, count) == "가나 "  # 3 + 3 + 1
    assert cut_to_tokens(text, 4, count) is None  # inside the 2nd syllable: no prefix is exactly 4
    for n in range(1, count(text) + 1):
        cut = cut_to_tokens(text, n, count)
        if cut is not None:
            assert count(cut) == n and text.startswith(cut)
            cut.encode("utf-8", "strict")
    assert cut_to_tokens("abc", 10, count) is None  # too short


def test_synthetic_prompts_cut_to_exactly_the_target_with_the_tokenizer(server, tmp_path):
    tj = byte_tokenizer(tmp_path / "tokenizer.json")
    rc, out = bench(server, tmp_path, "--requests", "4", "--prompt-tokens", "37-41", "--tokenizer", str(tj),
                    model="bytes")
    assert rc == 0
    for r in records(out):  # the fake counts the prompt's UTF-8 bytes, as the byte tokenizer does
        assert r["prompt_tokens"] == r["target_prompt_tokens"] and r["prompt_tokens_source"] == "usage"
    assert json.loads((out / "summary.json").read_text())["prompt_tokens_verified"] == "server"


def test_prompt_length_counted_with_the_tokenizer_when_the_server_does_not_say(server, tmp_path, capsys):
    tj = byte_tokenizer(tmp_path / "tokenizer.json")
    rc, out = bench(server, tmp_path, "--requests", "2", "--prompt-tokens", "30", "--no-stream-usage",
                    "--tokenizer", str(tj), name="counted")
    recs = records(out)
    assert rc == 0 and all(r["prompt_tokens"] == 30 and r["prompt_tokens_source"] == "tokenizer" for r in recs)
    assert json.loads((out / "summary.json").read_text())["prompt_tokens_verified"] == "tokenizer"
    capsys.readouterr()
    rc, out = bench(server, tmp_path, "--requests", "2", "--no-stream-usage", name="unverified")
    assert "prompt length unverified" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["prompt_tokens_verified"] == "unverified"


def test_jsonl_and_csv_prompt_files_are_sent_in_order(server, tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "first one"}\n{"text": "second, ünïcode"}\n"third"\n')
    rc, _ = bench(server, tmp_path, "--requests", "4", "--prompts", str(tmp_path / "p.jsonl"), name="j")
    assert rc == 0 and [b["prompt"] for b in server.bodies[-4:]] == ["first one", "second, ünïcode", "third", "first one"]
    (tmp_path / "p.csv").write_text('id,question\n1,"what is 2+2, really?"\n2,why\n')
    rc, out = bench(server, tmp_path, "--requests", "2", "--prompts", str(tmp_path / "p.csv"), "--prompt-column",
                    "question", name="c")
    assert rc == 0 and [b["prompt"] for b in server.bodies[-2:]] == ["what is 2+2, really?", "why"]
    assert all(r["target_prompt_tokens"] is None for r in records(out))  # a file prompt has no target length


@pytest.mark.parametrize("content, text", [
    ("{not json\n", "not a JSON object"),
    ('{"x": 1}\n', "no 'prompt' text"),
    ('{"messages": [{"role": "robot", "content": "hi"}]}\n', "role system/user/assistant"),
    ('{"prompt": "a"}\n{"messages": [{"role": "user", "content": "b"}]}\n', "mixes"),
    ("", "holds no prompts"),
])
def test_bad_prompt_files_are_one_user_error(tmp_path, content, text):
    from tokspeed.errors import UserError

    f = tmp_path / "p.jsonl"
    f.write_text(content)
    with pytest.raises(UserError, match=text):
        read_prompt_file(str(f))


def test_shared_prefix_is_the_same_system_prompt_for_everyone(server, tmp_path):
    tj = byte_tokenizer(tmp_path / "tokenizer.json")
    rc, _ = bench(server, tmp_path, "--requests", "3", "--api", "openai-chat", "--shared-prefix", "200",
                  "--prompt-tokens", "20", "--tokenizer", str(tj), model="bytes")
    bodies = server.bodies[-3:]
    systems = [b["messages"][0] for b in bodies]
    assert rc == 0 and all(m["role"] == "system" for m in systems)
    assert len({m["content"] for m in systems}) == 1 and len(systems[0]["content"].encode()) == 200  # exactly 200 tokens
    assert len({b["messages"][1]["content"] for b in bodies}) == 3  # the user parts differ


TRANSCRIPT = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
                           {"role": "assistant", "content": "hi there"}, {"role": "user", "content": "and then?"},
                           {"role": "assistant", "content": "then more"}, {"role": "user", "content": "bye"}]}


@pytest.mark.parametrize("api, model", [("openai-chat", "chat_echo"), ("ollama-chat", "ollama_chat")])
def test_multi_turn_sends_the_history_with_the_servers_own_answers(server, tmp_path, api, model):
    f = tmp_path / "chats.jsonl"
    f.write_text(json.dumps(TRANSCRIPT) + "\n")
    rc, out = bench(server, tmp_path, "--requests", "3", "--api", api, "--prompts", str(f), model=model)
    assert rc == 0
    bodies = server.bodies[-3:]
    assert [m["content"] for m in bodies[0]["messages"]] == ["be brief", "hello"]
    # turn 2 carries turn 1's real answer ("turn1!"), not the transcript's "hi there"
    assert [m["content"] for m in bodies[1]["messages"]] == ["be brief", "hello", "turn1!", "and then?"]
    assert [m["content"] for m in bodies[2]["messages"]][-2:] == ["turn2!", "bye"]
    assert [(r["conversation"], r["turn"]) for r in records(out)] == [(0, 0), (0, 1), (0, 2)]
    if api == "ollama-chat":
        assert server.paths[-1] == "/api/chat"


def test_a_target_no_prefix_hits_falls_back_to_the_nearest_count():
    """A space counts 3 tokens here, so some targets fall inside a space and no prefix hits them: the
    prompt is then the nearest cut (within 2 tokens), never the uncut words (n words, far over n tokens)."""
    from tokspeed.serverbench.workload import PromptSource

    count = lambda t: sum(3 if ch == " " else 1 for ch in t)   # noqa: E731  (letters 1 token, a space 3)
    src = PromptSource(count=count)
    for n in (4, 8, 16, 64):
        body = src._synthetic(0, n, __import__("random").Random(0))
        assert abs(count(body) - n) <= 2, (n, count(body))
    assert src.exact_misses > 0                                 # the fallback was exercised
