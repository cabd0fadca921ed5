"""The classes of docs/security.md's gates, each reproduced as an attacker would try it: numbers from files and
servers typed, text from any file made inert on the terminal, secrets masked in every spelling, memory bounded
in objects, time bounded, run directories held open. Each case asserts what every hostile case must end in (one
line, exit 2/3, no traceback, no raw control character, peak RSS <= 400 MB, within its time limit)."""

from __future__ import annotations

import gzip
import json
import os
import struct

import pytest

from hostile_cli import MAX_RSS_MB, assert_hostile_ok, cli

BIG = "1" + "0" * 400
ESC = "m\x1b[31mRED\u202eevil\x07"


def _run_file(path, **changes):
    run = {"schema": "tokspeed.run", "schema_version": 1, "created": "2025-01-01T00:00:00Z", "model": {"id": "m"},
           "hardware": {"id": "h"}, "settings": {}, "backend": "torch", "device": "cpu", "quant": "f16",
           "points": [{"batch": 1, "context": 512, "decode_tok_s": 10.0}]}
    for k, v in changes.items():
        if v is None:
            run.pop(k)
        elif k == "point":
            run["points"][0].update(v)
        else:
            run[k] = v
    text = json.dumps(run).replace('"BIG"', BIG)
    path.write_text(text)
    return path


# ---- 1. numbers from files are typed at the gate ---------------------------------------------------------
@pytest.mark.parametrize("changes,words", [
    ({"point": {"decode_tok_s": "BIG"}}, ["digits", "2**53"]),
    ({"point": {"context": "BIG"}}, ["digits"]),
    ({"point": {"decode_tok_s": 1.7e308}}, ["2**53"]),
    ({"point": {"decode_tok_s": 1e300}}, ["2**53"]),
    ({"point": {"decode_tok_s": 1e-300}}, ["decode_tok_s"]),       # below 2**-53: zero, then refused as a speed
    ({"model": None}, ["model", "missing"]),
    ({"quant": None}, ["quant", "missing"]),
])
def test_run_file_numbers_and_fields(tmp_path, changes, words):
    a = _run_file(tmp_path / "a.json")
    b = _run_file(tmp_path / "b.json", **changes)
    r, rss, _ = cli(["compare-runs", a, b])
    assert_hostile_ok(r, rss, (2,), words)
    r, rss, _ = cli(["compare-runs", a, b, "--json"])
    assert_hostile_ok(r, rss, (2,), words)


def test_text_from_a_run_file_reaches_the_terminal_escaped(tmp_path):
    a = _run_file(tmp_path / "a.json")
    b = _run_file(tmp_path / "b.json", model={"id": ESC})
    r, rss, _ = cli(["compare-runs", a, b])
    assert r.returncode == 0, r.stderr
    assert_hostile_ok(r, rss, (0,))
    assert "\\x1b[31mRED\\u202eevil\\x07" in "".join(r.stdout.split())     # shown, escaped, never acted on


def test_the_gate_itself():
    from tokspeed.errors import UserError
    from tokspeed.guard.typed import MAX_COUNT, count, field, loads, parse, rate, seconds

    assert parse('{"a": 9007199254740992, "b": 1e-300, "c": 0.5}') == {"a": MAX_COUNT, "b": 0.0, "c": 0.5}
    for bad in (BIG, "9007199254740993", "1e300", "-1.7e308", "NaN", "Infinity", "[" * 100 + "]" * 100):
        with pytest.raises(ValueError):
            parse(bad)
    with pytest.raises(UserError, match="x.json: nested too deeply"):
        loads("[" * 100_000, "x.json")
    # a bracket inside a string is text: a prompt of 100 "[" (and an escaped quote before more) parses
    assert parse('{"p": "' + "[" * 100 + '", "q": "a\\"' + "{" * 70 + '"}') == {"p": "[" * 100, "q": 'a"' + "{" * 70}
    with pytest.raises(ValueError, match="nested too deeply"):
        parse('["' + "[" * 70 + '", ' + "[" * 65 + "]" * 66)        # the same text, nested for real past 64
    # strings left open or full of escaped quotes are skipped in one pass (a pattern that failed at the end would
    # rescan from each escaped quote: 400,000 of them, ~10^11 steps) and end as invalid JSON
    for bad in ('"' + '\\"' * 400_000 + "[" * 70, '{"a": "' + '\\"[' * 400_000 + "\\"):
        with pytest.raises(ValueError, match="not valid JSON"):
            parse(bad)
    assert count(3) == 3 and count(3.0) == 3 and count(-1) is None and count(True) is None and count(2.5) is None
    assert seconds(86_400) == 86_400 and seconds(86_401) is None and seconds(-0.1) is None
    assert rate(1e3) == 1e3 and rate(float("inf")) is None
    with pytest.raises(UserError, match="field 'model' is missing"):
        field({}, "model", str, "run.json")
    with pytest.raises(UserError, match="field 'n' should be a whole number"):
        field({"n": "x"}, "n", count, "run.json")


def _bench_run(d, records, run_line=None, end=True):
    d.mkdir()
    lines = [json.dumps(run_line or {"type": "run", "model": "m", "url": "http://x", "api": "openai-completions"})]
    lines += [r if isinstance(r, str) else json.dumps({"type": "request", **r}) for r in records]
    if end:
        lines.append(json.dumps({"type": "end", "interrupted": False, "aborted": None}))
    (d / "requests.jsonl").write_text("\n".join(lines) + "\n")
    return d


def _req(i, **kw):
    rec = {"index": i, "phase": "c=1", "concurrency": 1, "ok": True, "error": None, "start_s": float(i),
           "end_s": i + 1.0, "e2e_s": 1.0, "ttft_s": 0.1, "tpot_s": 0.01, "decode_s": 0.9, "prompt_tokens": 100,
           "output_tokens": 91, "itl_s": [0.01] * 10}
    rec.update(kw)
    return rec


def test_summarize_types_every_record(tmp_path):
    """A 400-digit count, 1e300 times, an end before its start, escapes in the phase: the summary is made from
    what is sound and nothing reaches the terminal raw."""
    recs = [_req(0), _req(1), json.dumps(_req(2)).replace('"output_tokens": 91', f'"output_tokens": {BIG}'),
            _req(3, e2e_s=1e300 / 1e290, start_s=5.0, end_s=1.0), _req(4, phase=ESC), _req(5, ttft_s=-3)]
    d = _bench_run(tmp_path / "run", recs)
    r, rss, _ = cli(["bench-server", "--summarize", d])
    assert_hostile_ok(r, rss, (0, 2, 3))
    if r.returncode != 2:
        s = json.loads((d / "summary.json").read_text())
        assert all(v is None or v >= 0 for p in s["phases"] for v in [p.get("output_tok_s")])


def test_compare_escapes_a_summarys_text(tmp_path):
    runs = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        (d / "summary.json").write_text(json.dumps({
            "run": {"model": ESC, "url": "http://x"}, "phases": [{"phase": ESC, "concurrency": 1, "output_tok_s": 5}],
            "saturation": {"concurrency": 1, "limit": ESC}}))
        runs.append(d)
    r, rss, _ = cli(["bench-server", "--compare", *runs, "-o", tmp_path / "cmp.html"])
    assert_hostile_ok(r, rss, (0, 2))


@pytest.mark.parametrize("line", [
    {"start": 0, "prompt_tokens": "BIG", "output_tokens": 5},
    {"start": 1e300, "prompt_tokens": 5, "output_tokens": 5},
    {"start": 0, "prompt_tokens": 5, "output_tokens": 1.7e308},
])
def test_a_lengths_trace_is_typed(tmp_path, line):
    p = tmp_path / "trace.jsonl"
    p.write_text(json.dumps({"start": 0, "prompt_tokens": 5, "output_tokens": 5}) + "\n"
                 + json.dumps(line).replace('"BIG"', BIG) + "\n")
    r, rss, _ = cli(["serve", "llama-3-8b", "--hardware", "h100-sxm", "--gpus", "1", "--parallel", "tp=1",
                     "--lengths", p])
    assert_hostile_ok(r, rss, (2,), ["trace.jsonl"])


# ---- 2. output safety at the writer ---------------------------------------------------------------------
KEY = "sk-live-0123456789abcdefABCDEF/xyz+KEY"


def test_a_secret_is_masked_in_every_spelling():
    from urllib.parse import quote

    from tokspeed.guard.redact import Redactor, secret_name

    r = Redactor.for_run("http://h/v1", KEY)
    for spelled in (KEY, quote(KEY, safe=""), json.dumps(KEY)[1:-1].replace("/", "\\/"), KEY[:31], KEY[:8]):
        out = r.text(f"error: {spelled} was refused")
        assert KEY[:8] not in out, (spelled, out)
    assert r.text("?subscription-key=abcdefgh123&max_tokens=5") == "?subscription-key=***&max_tokens=5"
    assert r.text('{"apiKey": "zzzz12345", "output_tokens_source": "usage"}') == \
        '{"apiKey": "***", "output_tokens_source": "usage"}'
    for name in ("HF_TOKEN", "X-Api-Key", "Ocp-Apim-Subscription-Key", "sig", "client_secret", "passwd", "Auth"):
        assert secret_name(name), name
    for name in ("prompt_tokens", "max_tokens", "tokenizer", "key_length", "monkey", "signal"):
        assert not secret_name(name), name


def test_an_environment_token_echoed_into_a_config_is_never_printed(tmp_path):
    """A hub echoing HF_TOKEN into config.json: the writer (the console, the error line, --json) masks it."""
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                               "num_attention_heads": 2, "intermediate_size": 128, "vocab_size": 64,
                                               "_name_or_path": f"org/{token}", "architectures": [token[:20]]}))
    for args in (["inspect", d], ["predict", d, "--hardware", "rtx-4090"], ["predict", d, "--hardware", "rtx-4090",
                                                                              "--json"]):
        r, _, _ = cli(args, {"HF_TOKEN": token})
        assert token[:8] not in r.stdout + r.stderr, (args, r.stdout[-500:], r.stderr[-500:])


# ---- 3. memory budgets in objects -----------------------------------------------------------------------
def _gguf(path, kvs=(), tensors=(), size=None):
    """A GGUF v3 file: kvs = [(key, type, payload bytes)], tensors = [(name, dims, ggml type, offset)]."""
    def s(text):
        b = text.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs) + 1)
    out += s("general.architecture") + struct.pack("<I", 8) + s("llama")
    for key, vtype, payload in kvs:
        out += s(key) + struct.pack("<I", vtype) + payload
    for name, dims, gtype, off in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", gtype, off)
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(max(size or 0, len(out) + 64))
    return path


@pytest.mark.parametrize("kind", ["numeric", "strings", "overlap", "outside"])
def test_gguf_budgets_and_ranges(tmp_path, kind):
    p = tmp_path / f"{kind}.gguf"
    if kind == "numeric":         # a per-layer array of 40 M entries in a sparse file
        n = 40_000_000
        _gguf(p, [("llama.block_count", 9, struct.pack("<IQ", 0, n))], size=n + 4096)
        words = ["entries"]
    elif kind == "strings":       # a vocabulary of 2**24 empty strings
        n = 2**24
        _gguf(p, [("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, n))], size=8 * n + 4096)
        words = ["entries"]
    elif kind == "overlap":       # every tensor at offset 0
        ts = [(f"blk.0.t{i}.weight", (64, 64), 0, 0) for i in range(4)]
        _gguf(p, [], ts, size=1 << 20)
        words = ["overlap"]
    else:
        _gguf(p, [], [("t.weight", (1 << 20, 1 << 10), 0, 0)], size=1 << 20)
        words = ["truncated"]
    r, rss, _ = cli(["inspect", p])
    assert_hostile_ok(r, rss, (2,), words)


def test_a_safetensors_header_of_tiny_tensors_is_counted_before_it_is_parsed(tmp_path):
    d = tmp_path / "st"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                               "num_attention_heads": 2, "intermediate_size": 128, "vocab_size": 64}))
    entries = ",".join(f'"t{i}":{{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}' for i in range(300_000))
    header = ("{" + entries + "}").encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    r, rss, _ = cli(["inspect", d])
    assert_hostile_ok(r, rss, (2,), ["tensors"])


def test_a_prompts_csv_of_empty_rows_is_bounded(tmp_path):
    from tokspeed.errors import UserError
    from tokspeed.serverbench.workload import read_prompt_file

    p = tmp_path / "p.csv"
    p.write_text("prompt,x\n" + ",\n" * (8 * 2**20) + "hello,1\n")
    texts, _ = read_prompt_file(str(p))            # empty rows are skipped, never held
    assert texts == ["hello"]
    q = tmp_path / "q.csv"
    q.write_text("prompt\n" + "a\n" * 300_000)
    with pytest.raises(UserError, match="more than 262,144 rows"):
        read_prompt_file(str(q))


def test_a_gzip_bomb_inflates_in_pieces_and_stops_at_the_cap():
    import asyncio

    from tokspeed.guard import bounded

    class Resp:
        def __init__(self, body, enc="gzip"):
            self.headers = {"content-encoding": enc}
            self._body = body

        async def aiter_raw(self):
            for i in range(0, len(self._body), 4096):
                yield self._body[i:i + 4096]

    blank = gzip.compress(b"\n" * (48 * 2**20))        # ~47 KB that inflates to 48 MiB of blank SSE lines
    assert len(blank) < 100_000

    async def biggest(resp):
        top = n = 0
        async for piece in bounded.abody_chunks(resp):
            top, n = max(top, len(piece)), n + len(piece)
        return top, n

    top, n = asyncio.run(biggest(Resp(blank)))
    assert top <= bounded.PIECE_BYTES and n == 48 * 2**20
    bomb = gzip.compress(b"\0" * (bounded.MAX_INFLATED_BYTES + 2**20))
    with pytest.raises(bounded.BodyTooLarge, match="inflating past"):
        asyncio.run(biggest(Resp(bomb)))
    with pytest.raises(bounded.BodyTooLarge, match="content-encoding"):
        asyncio.run(biggest(Resp(b"x", "compress")))


def test_a_servers_token_counts_are_bounded():
    """A usage jump of 10**300 tokens made the gap reservoir walk 22 M skips; counts beyond any model's
    context are impossible values (the request is malformed), so the reservoir never sees them."""
    from tokspeed.serverbench.apis import MAX_TOKENS_PER_ANSWER, sane

    bad: list = []
    out = sane({"completion_tokens": 10**300, "prompt_tokens": MAX_TOKENS_PER_ANSWER, "eval_count": 2.0}, bad)
    assert out["completion_tokens"] is None and out["prompt_tokens"] == MAX_TOKENS_PER_ANSWER
    assert out["eval_count"] is None and len(bad) == 2


# ---- 4. deadlines ----------------------------------------------------------------------------------------
def test_a_deadline_says_how_far_it_got(capsys, monkeypatch):
    from tokspeed.errors import UserError
    from tokspeed.guard import deadline

    clock = [0.0]
    monkeypatch.setattr(deadline.time, "monotonic", lambda: clock[0])
    d = deadline.Deadline("the search", 10.0, "ask for less", unit="layouts")
    d.check(0, 5)
    clock[0] = 6.0
    d.check(1, 5)
    assert "tokspeed: the search: 1 of 5 layouts, 6 s" in capsys.readouterr().err
    clock[0] = 11.0
    with d, pytest.raises(UserError, match=r"the search did not finish within 10 s \(1 of 5 layouts done\)"):
        for _ in range(deadline.TICKS):
            deadline.tick()


def test_a_ray_address_with_unicode_digits_is_one_line(tmp_path):
    r, rss, _ = cli(["bench-server", "http://127.0.0.1:9", "--model", "m", "--ray", "127.0.0.1:²",
                     "-o", tmp_path / "run"])
    assert_hostile_ok(r, rss, (2,), ["Ray address"])


def test_a_long_local_profile_path_is_one_line():
    r, rss, _ = cli(["predict", "llama-3-8b", "--hardware", "local"],
                    {"TOKSPEED_LOCAL_PROFILE": "/tmp/" + "x" * 300 + ".toml"})
    assert_hostile_ok(r, rss, (2,), ["too long"])


# ---- 5. a run directory held open ------------------------------------------------------------------------
def test_a_run_directory_swapped_for_a_link_is_not_written_through(tmp_path):
    from tokspeed.guard.outputs import RunDir

    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    elsewhere.mkdir()
    d = RunDir(run)
    f = d.open_append("requests.jsonl")
    f.write("one\n")
    os.rename(run, tmp_path / "moved")
    os.symlink(elsewhere, run)                            # the swap, mid-run
    f.write("two\n")
    f.close()
    d.write("summary.json", "{}")
    d.close()
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / "moved" / "requests.jsonl").read_text() == "one\ntwo\n"
    assert (tmp_path / "moved" / "summary.json").read_text() == "{}"


def test_rss_budget_is_the_documented_one():
    assert MAX_RSS_MB == 400


def test_costly_web_answers_are_admitted_a_few_at_a_time():
    """Twelve report pages once held every web worker and /api/models waited 13 s: past COSTLY_AT_ONCE, a
    costly answer is a 429 with Retry-After at once, and the threads stay free for cheap ones."""
    pytest.importorskip("fastapi")
    import contextlib

    from tokspeed.web.app import COSTLY_AT_ONCE, RETRY_AFTER_S, costly
    from tokspeed.web.errors import ApiError

    with contextlib.ExitStack() as held:
        for _ in range(COSTLY_AT_ONCE):
            held.enter_context(costly("the report page"))
        with pytest.raises(ApiError) as e:
            with costly("the report page"):
                pass
        assert e.value.status == 429 and e.value.retry_after_s == RETRY_AFTER_S
    with costly("the report page"):          # released: admitted again
        pass


def test_only_credentials_of_the_environment_are_masked():
    """HF_TOKEN is masked wherever it appears; HF_TOKEN_PATH (a path, /root/.cache/...) is not a secret, or every
    path under the cache would be hidden."""
    from tokspeed.guard.redact import env_credential

    assert env_credential("HF_TOKEN", "hf_AbCdEfGhIjKl") and env_credential("OPENAI_API_KEY", "sk-0123456789")
    for name, value in (("HF_TOKEN_PATH", "/root/.cache/huggingface/token"), ("SSH_AUTH_SOCK", "/tmp/ssh-1/agent.9"),
                        ("TOKENIZERS_PARALLELISM", "false"), ("HF_TOKEN", "short"), ("HOME", "/root")):
        assert not env_credential(name, value), name


def test_a_gzip_body_of_blank_lines_is_read_in_bounded_memory(tmp_path):
    """47 KB of gzip inflating to 48 MiB of blank SSE lines once took the client to 1.26 GB."""
    pytest.importorskip("httpx")
    from hostile_server import HostileServer

    with HostileServer("none") as srv:
        r, rss, took = cli(["bench-server", srv.url, "--model", "gzip_blank", "--requests", "1", "--warmup", "0",
                            "-o", tmp_path / "run", "--quiet", "--request-timeout", "60"], timeout=120)
    assert_hostile_ok(r, rss, (0, 3))
    rec = [json.loads(x) for x in (tmp_path / "run" / "requests.jsonl").read_text().splitlines()
           if '"type":"request"' in x][0]
    assert rec["ok"], rec


def test_a_document_of_many_small_objects_is_refused_before_it_is_built():
    # "{}," is 3 bytes and an empty dict 64: 16 MiB of them would take ~450 MB. At the budget a document parses;
    # one object more is one line; brackets inside strings are text, not objects
    from tokspeed.guard.typed import MAX_CONTAINERS, parse

    at = "[" + ",".join(["{}"] * (MAX_CONTAINERS - 1)) + "]"
    assert len(parse(at)) == MAX_CONTAINERS - 1
    with pytest.raises(ValueError, match=f"more than {MAX_CONTAINERS:,} objects and lists"):
        parse("[" + ",".join(["{}"] * MAX_CONTAINERS) + "]")
    assert parse(json.dumps(["{}" * MAX_CONTAINERS])) == ["{}" * MAX_CONTAINERS]
    # a safetensors header at the tensor cap (2**18 tensors, three containers each) is a real document
    header = {f"t{i}": {"dtype": "F16", "shape": [2, 2], "data_offsets": [8 * i, 8 * i + 8]} for i in range(2**18)}
    assert len(parse(json.dumps(header))) == 2**18


def test_a_config_of_empty_objects_is_one_line_within_a_memory_bound(tmp_path):
    # 15 MB of "{}," under the 16 MiB document cap: it took ~450 MB of memory before the budget
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "junk": [' + ",".join(["{}"] * 5_000_000) + "]}")
    r, rss_mb, _ = cli(["predict", str(p), "--hardware", "rtx-4090"])
    assert_hostile_ok(r, rss_mb, words=("objects and lists",))
    assert rss_mb < 200, rss_mb
