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
