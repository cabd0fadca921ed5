"""Secrets never reach a file or the console (tokspeed.guard.redact): the API key, a URL's user:password and
token-like query values, whatever the server echoes back."""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_server import HostileServer
from tokspeed.guard.redact import PLAIN, Redactor

pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-TESTKEY-0123456789abcdef"
USER, PASSWORD, TOKEN = "alice", "pw-s3cret-9876", "tok-q-55555"


def bench(url, *args, timeout=60):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKSPEED_API_KEY": ""}
    return subprocess.run([sys.executable, "-m", "tokspeed", "bench-server", url, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def everything_written(out: Path, p) -> str:
    return "".join(f.read_text(errors="replace") for f in out.iterdir()) + p.stdout + p.stderr


def assert_no_secret(text: str):
    for secret in (KEY, PASSWORD, TOKEN, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()):
        assert secret not in text


@pytest.mark.parametrize("model", ["ok", "echo_error"])
def test_api_key_and_url_credentials_never_reach_any_output(tmp_path, model):
    """/props echoing the Authorization header once put the key into summary.json, report.html and
    requests.jsonl; a URL's user:password@ and ?token= reached the output files."""
    with HostileServer("echo") as srv:
        url = srv.url.replace("http://", f"http://{USER}:{PASSWORD}@") + f"/v1?token={TOKEN}"
        out = tmp_path / "run"
        p = bench(url, "--model", model, "--requests", "2", "--warmup", "0", "--api-key", KEY, "-o", out, "--quiet",
                  "--json")
    assert p.returncode in (0, 3), p.stderr
    assert {f.name for f in out.iterdir()} >= {"requests.jsonl", "summary.json", "requests.csv", "report.html"}
    text = everything_written(out, p)
    assert_no_secret(text)
    if model == "ok":
        assert json.loads((out / "summary.json").read_text())["server"]["engine"] == "llama.cpp"
    assert "***" in text


def test_the_redactor_removes_what_it_was_told_and_what_looks_like_a_credential():
    r = Redactor.for_run(f"http://{USER}:{PASSWORD}@h/v1", KEY)
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    text = r.text(f"k={KEY} b=Basic {basic} pw={PASSWORD}")
    assert KEY not in text and basic not in text and PASSWORD not in text
    assert PLAIN.text("see http://u:p@x.example/a?x=1&api_key=zzz9&token=abc") == \
        "see http://***@x.example/a?x=1&api_key=***&token=***"
    assert PLAIN.text("Authorization: Bearer abcdef123") == "Authorization: Bearer ***"
    prose = "no prompt token count and basic usage; Token counts differ"      # prose is left alone
    assert PLAIN.text(prose) == prose
    doc = PLAIN.obj({"authorization": "xyz-123", "prompt_tokens": "128", "tokenizer": "/t/tokenizer.json",
                     "api_key": "from $TOKSPEED_API_KEY", "nested": [{"X-Api-Key": "k-999"}]})
    assert doc == {"authorization": "***", "prompt_tokens": "128", "tokenizer": "/t/tokenizer.json",
                   "api_key": "from $TOKSPEED_API_KEY", "nested": [{"X-Api-Key": "***"}]}


@pytest.mark.parametrize("text, secret, kept", [
    # assignments in any spelling: environment style, YAML, spaced, Python's quotes, unquoted names
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz", "sk-proj-abcdefghijklmnopqrstuvwxyz", "OPENAI_API_KEY="),
    ("api_key: zq81-very-secret-value", "zq81-very-secret-value", "api_key: "),
    ("password = hunter2hunter2", "hunter2hunter2", "password = "),
    ("{'api_key': 'zq81-very-secret-value'}", "zq81-very-secret-value", "{'api_key': '"),
    ("api-key=zq81verysecret&x=1", "zq81verysecret", "api-key="),
    # a command line's flags
    ("tokspeed bench-server --api-key zq81verysecretvalue --model x", "zq81verysecretvalue",
     "tokspeed bench-server --api-key "),
    ("--hf-token=zq81verysecretvalue", "zq81verysecretvalue", "--hf-token="),
    # shapes of their own, with no name beside them
    ("see hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 there", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "see "),
    ("Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
     "Authorization: token "),
    ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789", ""),
    ("key id AKIAIOSFODNN7EXAMPLE leaked", "AKIAIOSFODNN7EXAMPLE", "key id "),
    ("AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz012345", "AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz012345", ""),
])
def test_credentials_are_masked_in_the_spellings_text_takes(text, secret, kept):
    out = PLAIN.text(text)
    assert secret not in out and "***" in out and out.startswith(kept)


@pytest.mark.parametrize("text", [
    "one decode token at context 0 = 8.12 ms (123 tok/s), averaged over 128 tokens",
    "prompt_tokens: 51200000 max_tokens=12345678 --max-tokens 12345678 --ubatch 2048",
    "task-abcdefghijklmnopqrstuvwxyz0123 and disk-abcdefghijklmnopqrstuvwxyz",
    '"prompt_tokens": 512, "model": "llama-3-8b-instruct-long-name"',
    "model: meta-llama/Llama-3.1-8B-Instruct  engine: llama.cpp-cuda  quant: Q4_K_M",
    "token budget: 8192; tokenizer: sentencepiece-unigram",
])
def test_ordinary_output_is_left_as_it_is(text):
    assert PLAIN.text(text) == text


def test_a_figure_beside_a_credential_word_is_left_alone():
    # JSON output: "joules_per_token" names a token (singular) and 1.2345678e-05 has a letter in it
    text = '"joules_per_token": 1.2345678e-05, "bytes_per_token": 4696855296.0, --token-budget 1.5e+10'
    assert PLAIN.text(text) == text
