"""A generator over input kinds, not a list (docs/security.md, "Gates"): for every field of every kind of file
or body tokspeed reads, a valid document gets one hostile value at a time -- huge and tiny numbers, wrong types,
control and bidirectional characters, deep nesting, many tiny entries -- and the verb that reads it must end in
exit 0, 2 or 3 with at most one error line, no traceback and no raw control character on the terminal.

The verbs run in-process (``tokspeed.cli.main.main``), so the walk over ~3,000 documents takes a minute; the
peak memory and the wall time of the heaviest kinds are checked in a subprocess by tests/test_hostile_typed.py.
A field added to a schema (``guard.typed``, ``serverbench.record.REQUEST_FIELDS``, ``guard.limits``) is added
to the documents below, and a kind tokspeed learns to read gets a document here.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import struct
import time

import pytest

from hostile_cli import RAW_CONTROL
from tokspeed.cli.main import main

BIG = 10**400
HOSTILE = [BIG, -BIG, 2**53 + 1, 1e300, -1e300, 1e-300, -1, 0, 2.5, "fast", "", None, True, [], {}, [0] * 20_000,
           "\x1b[31mred\x00\u202e", "x" * 70_000, "[" * 70 + "]" * 70, "DEEP"]
CALL_LIMIT_S = 20


def _dump(doc) -> str:
    text = json.dumps(doc, default=str)
    text = text.replace(f'"{BIG}"', str(BIG)).replace(str(BIG), "1" + "0" * 400)
    return text.replace('"DEEP"', "[" * 100 + "]" * 100)


def _paths(doc, prefix=()):
    """Every field path of ``doc`` (dict keys and list index 0)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list) and doc:
        yield prefix + (0,)
        yield from _paths(doc[0], prefix + (0,))


def _set(doc, path, value):
    out = copy.deepcopy(doc)
    node = out
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return out


def variants(doc):
    for path in _paths(doc):
        for v in HOSTILE:
            yield path, _set(doc, path, v)
        yield path, _drop(doc, path)


def _drop(doc, path):
    out = copy.deepcopy(doc)
    node = out
    for p in path[:-1]:
        node = node[p]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    return out


def run(args, capsys) -> tuple[int, str, str]:
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert time.perf_counter() - t0 < CALL_LIMIT_S, args
    return code, out.getvalue(), err


def check(code, out, err, what):
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln[0].isspace()]   # wrapped lines continue one
    assert code in (0, 2, 3), (what, code, err[-500:])
    if code == 2:
        assert len(lines) == 1 and "error:" in lines[0], (what, err[-800:])
    assert not RAW_CONTROL.search(out + err), (what, repr((out + err)[:300]))


@pytest.fixture
def quiet(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


RUN = {"schema": "tokspeed.run", "schema_version": 1, "created": "2025-01-01T00:00:00Z", "model": {"id": "m"},
       "hardware": {"id": "h"}, "settings": {"contexts": [512]}, "backend": "torch", "device": "cpu", "quant": "f16",
       "points": [{"batch": 1, "context": 512, "decode_tok_s": 10.0, "prefill_tok_s": 100.0, "mbu": 0.5}],
       "warnings": []}


def test_run_files(tmp_path, capsys, quiet):
    base = tmp_path / "a.json"
    base.write_text(json.dumps(RUN))
    n = 0
    for path, doc in variants(RUN):
        f = tmp_path / "b.json"
        f.write_text(_dump(doc))
        for extra in ([], ["--json"]):
            check(*run(["compare-runs", base, f, *extra], capsys), ("run", path))
            n += 1
    assert n > 300


SUMMARY = {"run": {"model": "m", "url": "http://x"}, "phases": [{"phase": "c=1", "concurrency": 1, "load": 1,
           "output_tok_s": 5.0, "stats": {"ttft_s": {"p90": 0.1}}, "goodput_rps": 1.0}],
           "saturation": {"concurrency": 1, "limit": "server"}, "server": {"engine": "llama.cpp"}}


def test_summaries(tmp_path, capsys, quiet):
    b = tmp_path / "b"
    b.mkdir()
    (b / "summary.json").write_text(json.dumps(SUMMARY))
    a = tmp_path / "a"
    a.mkdir()
    for path, doc in variants(SUMMARY):
        (a / "summary.json").write_text(_dump(doc))
        check(*run(["bench-server", "--compare", a, b, "-o", tmp_path / "c.html"], capsys), ("summary", path))


REQUEST = {"type": "request", "index": 0, "phase": "c=1", "concurrency": 1, "ok": True, "error": None,
           "start_s": 0.0, "end_s": 1.0, "e2e_s": 1.0, "ttft_s": 0.1, "tpot_s": 0.01, "decode_s": 0.9,
           "queued_s": 0.0, "prompt_tokens": 100, "output_tokens": 91, "max_tokens": 128, "chunks": 91,
           "itl_s": [0.01, 0.01], "finish_reason": "length", "http_status": 200}
RUN_LINE = {"type": "run", "model": "m", "url": "http://x", "api": "openai-completions", "concurrency": [1]}


def test_request_logs(tmp_path, capsys, quiet):
    d = tmp_path / "run"
    d.mkdir()
    for path, doc in variants(REQUEST):
        lines = [json.dumps(RUN_LINE), json.dumps(REQUEST), _dump(doc), json.dumps({"type": "end"})]
        (d / "requests.jsonl").write_text("\n".join(lines) + "\n")
        check(*run(["bench-server", "--summarize", d, "--no-report"], capsys), ("requests", path))


def test_lengths_traces(tmp_path, capsys, quiet):
    line = {"start": 0.0, "prompt_tokens": 64, "output_tokens": 8}
    f = tmp_path / "t.jsonl"
    for path, doc in variants(line):
        f.write_text(json.dumps(line) + "\n" + _dump(doc) + "\n")
        check(*run(["serve", "llama-3-8b", "--hardware", "h100-sxm", "--gpus", "1", "--parallel", "tp=1",
                    "--lengths", f, "--json"], capsys), ("trace", path))


CONFIG = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
          "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 64, "max_position_embeddings": 4096,
          "rope_theta": 10000.0, "torch_dtype": "bfloat16", "architectures": ["LlamaForCausalLM"]}


def test_model_configs(tmp_path, capsys, quiet):
    d = tmp_path / "m"
    d.mkdir()
    for path, doc in variants(CONFIG):
        (d / "config.json").write_text(_dump(doc))
        check(*run(["predict", d, "--hardware", "rtx-4090", "--json"], capsys), ("config", path))


HARDWARE = {"name": "d", "kind": "gpu", "vendor": "NVIDIA", "memory_gb": 24, "bandwidth_gbps": 1000,
            "fp16_tflops": 100}


def _toml(doc) -> str | None:
    lines = []
    for k, v in doc.items():
        if isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, (int, float)):
            lines.append(f"{k} = {v!r}" if abs(v) < 1e30 or isinstance(v, float) else f"{k} = {v}")
        elif isinstance(v, str):
            lines.append(f"{k} = {json.dumps(v)}")
        elif isinstance(v, list) and len(v) < 100:
            lines.append(f"{k} = {json.dumps(v)}")
        elif v is None or isinstance(v, (list, dict)):
            continue
    return "\n".join(lines) + "\n"


def test_hardware_files(tmp_path, capsys, quiet):
    f = tmp_path / "hw.toml"
    for path, doc in variants(HARDWARE):
        f.write_text(_toml(doc))
        check(*run(["predict", "llama-3-8b", "--hardware", f, "--json"], capsys), ("hardware", path))


def test_prompt_files(tmp_path):
    from tokspeed.errors import UserError
    from tokspeed.serverbench.workload import read_prompt_file

    line = {"messages": [{"role": "user", "content": "hi"}]}
    f = tmp_path / "p.jsonl"
    for path, doc in variants(line):
        f.write_text(_dump(doc) + "\n")
        try:
            read_prompt_file(str(f))
        except UserError as e:
            assert "\n" not in e.message
    for v in HOSTILE:
        g = tmp_path / "p.csv"
        g.write_text("prompt\n" + (json.dumps(v) if not isinstance(v, str) else v).replace("\n", " ") + "\n")
        try:
            read_prompt_file(str(g))
        except UserError:
            pass


def _gguf_kv(key: str, value) -> bytes | None:
    def s(text):
        b = text.encode("utf-8", "replace")
        return struct.pack("<Q", len(b)) + b
    if isinstance(value, bool):
        return s(key) + struct.pack("<IB", 7, value)
    if isinstance(value, int) and -2**63 <= value < 2**64:
        return s(key) + (struct.pack("<IQ", 10, value) if value >= 0 else struct.pack("<Iq", 11, value))
    if isinstance(value, float):
        return s(key) + struct.pack("<If", 6, value if abs(value) < 3e38 else float("inf"))
    if isinstance(value, str):
        return s(key) + struct.pack("<I", 8) + s(value)
    if isinstance(value, list):
        return s(key) + struct.pack("<IIQ", 9, 4, len(value)) + b"".join(struct.pack("<I", 0) for _ in value)
    return None


def test_gguf_metadata(tmp_path, capsys, quiet):
    """Every llama.* count a GGUF states, hostile: inspect and predict read the file and end in one line."""
    def s(text):
        b = text.encode()
        return struct.pack("<Q", len(b)) + b
    keys = {"llama.block_count": 2, "llama.embedding_length": 64, "llama.attention.head_count": 2,
            "llama.attention.head_count_kv": 2, "llama.feed_forward_length": 128, "llama.context_length": 4096,
            "llama.rope.freq_base": 10000.0, "general.name": "m"}
    f = tmp_path / "m.gguf"
    for key in keys:
        for v in HOSTILE:
            kvs = [_gguf_kv(k, v if k == key else keys[k]) for k in keys]
            if any(x is None for x in kvs):
                continue
            head = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs) + 1) + s("general.architecture") \
                + struct.pack("<I", 8) + s("llama")
            f.write_bytes(head + b"".join(kvs) + b"\0" * 64)
            for args in (["inspect", f], ["predict", f, "--hardware", "rtx-4090", "--json"]):
                check(*run(args, capsys), ("gguf", key, repr(v)[:40]))


def test_safetensors_headers(tmp_path, capsys, quiet):
    d = tmp_path / "st"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    entry = {"t.weight": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}, "__metadata__": {"a": "b"}}
    for path, doc in variants(entry):
        header = _dump(doc).encode()
        (d / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
        check(*run(["inspect", d], capsys), ("safetensors", path))


def test_server_chunks_never_raise():
    """Every field of a streamed chunk, hostile: the request is recorded (ok or malformed), never a crash."""
    from tokspeed.serverbench.client import _StreamState

    chunk = {"choices": [{"text": "a", "finish_reason": None, "delta": {"content": "a"}}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 1}, "timings": {"predicted_n": 1, "predicted_ms": 3.0}}
    for api in ("openai-completions", "openai-chat", "ollama"):
        for path, doc in variants(chunk):
            st = _StreamState(api, None)
            st.event(_dump(doc), 0.1)
            st.event(_dump(doc), 0.2)
            st.fields(0.3)


def _gguf_blob() -> bytes:
    """A valid tiny llama GGUF (metadata only), the blob an Ollama manifest points to."""
    def s(text):
        b = text.encode()
        return struct.pack("<Q", len(b)) + b
    keys = {"llama.block_count": 2, "llama.embedding_length": 64, "llama.attention.head_count": 2,
            "llama.attention.head_count_kv": 2, "llama.feed_forward_length": 128, "llama.context_length": 4096, "llama.vocab_size": 64,
            "general.file_type": 15}
    kvs = [_gguf_kv(k, v) for k, v in keys.items()]
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs) + 1) + s("general.architecture") + struct.pack("<I", 8) \
        + s("llama")
    return head + b"".join(kvs) + b"\0" * 64


GGUF_DIGEST = "sha256:" + "ab" * 32
MANIFEST = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                       "digest": "sha256:" + "cd" * 32, "size": 485},
            "layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": GGUF_DIGEST, "size": 400}]}
# digests that would name a path outside the store if they reached a path join unchecked
DIGEST_PATHS = ["sha256:../../../outside", "sha256-" + "ab" * 32 + "/../../../outside", "/etc/passwd",
                "sha256:" + "ab" * 32 + "\x00", "..", "sha256:" + "AB" * 32, "sha256:" + "ab" * 32 + "\n"]


def test_ollama_manifests(tmp_path, capsys, quiet, monkeypatch):
    """Every field of an Ollama manifest, hostile (and digests shaped as paths): one line, and no blob read
    from outside ``<store>/blobs``."""
    store = tmp_path / "store"
    (store / "blobs").mkdir(parents=True)
    (store / "blobs" / GGUF_DIGEST.replace(":", "-")).write_bytes(_gguf_blob())
    (tmp_path / "outside").write_bytes(_gguf_blob())       # what a traversing digest would reach
    m = store / "manifests" / "registry.ollama.ai" / "library" / "m" / "latest"
    m.parent.mkdir(parents=True)
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    m.write_text(json.dumps(MANIFEST))
    code, out, err = run(["predict", "ollama:m", "--hardware", "rtx-4090", "--json"], capsys)
    assert code == 0, err                                   # the valid store is read
    digest = ("layers", 0, "digest")
    docs = list(variants(MANIFEST)) + [(digest, _set(MANIFEST, digest, d)) for d in DIGEST_PATHS]
    n = 0
    for path, doc in docs:
        m.write_text(_dump(doc))
        for args in (["inspect", "ollama:m"], ["predict", "ollama:m", "--hardware", "rtx-4090", "--json"]):
            code, out, err = run(args, capsys)
            check(code, out, err, ("ollama", path))
            if path == digest and doc["layers"][0].get("digest") in DIGEST_PATHS:
                assert code == 2 and "bad digest" in err, (path, err)
            n += 1
    assert n > 400
    m.write_text(json.dumps(MANIFEST))
    blob = store / "blobs" / GGUF_DIGEST.replace(":", "-")
    for target in (tmp_path / "outside", blob):             # a link out of the store; a link to itself (a loop)
        blob.unlink()
        blob.symlink_to(target)
        code, out, err = run(["inspect", "ollama:m"], capsys)
        check(code, out, err, ("ollama", "link", target))
        assert code == 2 and ("link out of" in err or "loop" in err), err


HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"
HUB_SHARD = "model-00001-of-00001.safetensors"
DOWN = "model.layers.0.mlp.down_proj.weight"                 # 64 x 128 BF16: 16,384 bytes
HUB_INDEX = {"metadata": {"total_size": 16384}, "weight_map": {DOWN: HUB_SHARD}}
HUB_HEADER = {"header_len": 200, "file_size": 8 + 200 + 16384,   # the hub's answer as tokspeed keeps it
              "header": {DOWN: {"dtype": "BF16", "shape": [64, 128], "data_offsets": [0, 16384]},
                         "__metadata__": {"format": "pt"}}}


def _hub_cache(tmp_path, config, index, header) -> None:
    """A repository as a hub leaves it in the caches: config.json and the index in the Hugging Face cache,
    the shard's header in tokspeed's header cache; read offline, every byte of it is the hub's."""
    repo = tmp_path / "hf" / "hub" / "models--org--tiny"
    snap = repo / "snapshots" / HUB_COMMIT
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(HUB_COMMIT)
    (snap / "config.json").write_text(config)
    (snap / "model.safetensors.index.json").write_text(index)
    head = tmp_path / "cache" / "tokspeed" / "hf-headers" / "org--tiny" / HUB_COMMIT
    head.mkdir(parents=True, exist_ok=True)
    (head / f"{HUB_SHARD}.json").write_text(header)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch, quiet):
    pytest.importorskip("huggingface_hub")
    for var in ("HF_TOKEN", "HUGGINGFACE_HUB_CACHE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_hub_responses(tmp_path, capsys, hub_cache):
    """Every field of a hub's config.json, shard index and safetensors header (header length, file size,
    dtypes, shapes, offsets), hostile: one line, exit 2, never a traceback."""
    base = (json.dumps(CONFIG), json.dumps(HUB_INDEX), json.dumps(HUB_HEADER))
    _hub_cache(tmp_path, *base)
    args = ["predict", "hf:org/tiny", "--hardware", "rtx-4090", "--json"]
    code, out, err = run(["inspect", "hf:org/tiny"], capsys)
    assert code == 0 and "16.38 KB" in out, err             # the valid cache is read: 64 x 128 x 2 bytes
    n = 0
    for which, doc in enumerate((CONFIG, HUB_INDEX, HUB_HEADER)):
        for path, bad in variants(doc):
            files = list(base)
            files[which] = _dump(bad)
            _hub_cache(tmp_path, *files)
            check(*run(args, capsys), ("hub", which, path))
            n += 1
    assert n > 400


def _shard(length: int | None, body: bytes) -> bytes:
    return (struct.pack("<Q", length) if length is not None else b"") + body


def test_hub_header_bytes(tmp_path, capsys, quiet, monkeypatch):
    """The bytes a hub sends for a shard's header, hostile: the 8-byte length (zero, past the file, past the
    100 MB cap, 2^64 - 1, cut short) and the JSON after it (not UTF-8, not an object, a 262,147-tensor flood,
    two tensors on the same bytes)."""
    pytest.importorskip("huggingface_hub")
    from test_hf_hub import FakeHub  # lazy: that module skips itself without huggingface_hub

    flood = b"{" + b",".join(b'"%d":{}' % i for i in range(262_147)) + b"}"     # MAX_TENSORS + 3 entries
    down = {"dtype": "BF16", "shape": [64, 128], "data_offsets": [0, 16384]}
    two = json.dumps({DOWN: down, DOWN.replace(".0.", ".1."): down}).encode()   # both at data byte 0
    good = json.dumps({DOWN: {"dtype": "BF16", "shape": [64, 128], "data_offsets": [0, 16384]}}).encode()
    shards = {"zero": _shard(0, b""), "past_end": _shard(len(good) + 1000, good), "cap": _shard(100_000_001, good),
              "max": _shard(2**64 - 1, good), "short": b"\x10\x00\x00", "utf8": _shard(4, b"\xff\xfe{}"),
              "list": _shard(2, b"[]"), "flood": _shard(len(flood), flood),
              "dtype": _shard(len(good), good.replace(b"BF16", b"\\u001b[2J\\u202e")),
              "overlap": _shard(len(two), two + bytes(16384))}
    hub = FakeHub()
    try:
        for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HUGGINGFACE_HUB_CACHE"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        for name, raw in shards.items():
            hub.repos[f"org/{name}"] = {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": raw}
            code, out, err = run(["predict", f"org/{name}", "--hardware", "rtx-4090", "--json"], capsys)
            check(code, out, err, ("hub header", name))
            assert code == 2 and "model.safetensors" in err, (name, err)
    finally:
        hub.stop()


def test_the_heaviest_manifest_and_hub_headers_stay_in_memory(tmp_path):
    """Bounded RSS in a subprocess: an Ollama manifest of empty layers filling the document cap, a hub header
    (as the header cache keeps it) of 300,000 tiny tensors, and a 60 MB header of one 30-million-entry shape
    sent by a hub and read from a local file (400 MB of integers before the entries were counted)."""
    from hostile_cli import MAX_RSS_MB, assert_hostile_ok, cli  # lazy: the subprocess helper, this test only
    from tokspeed.userfile import MAX_DOCUMENT_BYTES  # lazy: the cap this test fills, this test only

    store = tmp_path / "store"
    m = store / "manifests" / "registry.ollama.ai" / "library" / "m" / "latest"
    m.parent.mkdir(parents=True)
    n = (MAX_DOCUMENT_BYTES - 100) // 3
    m.write_text('{"schemaVersion": 2, "layers": [' + ",".join(["{}"] * n) + "]}")
    r, rss, _ = cli(["inspect", "ollama:m"], {"OLLAMA_MODELS": str(store)})
    assert_hostile_ok(r, rss, (2,))
    entries = ",".join(f'"t{i}":{{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}' for i in range(300_000))
    header = json.dumps({"header_len": 100, "file_size": 108, "header": "HEADER"}).replace('"HEADER"',
                                                                                    "{" + entries + "}")
    _hub_cache(tmp_path, json.dumps(CONFIG), json.dumps(HUB_INDEX), header)
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r, rss, _ = cli(["inspect", "hf:org/tiny"], env)
    assert_hostile_ok(r, rss, (2,))
    # one bytes object (a child's peak RSS starts at its parent's at the fork: no 30-million-item list here)
    long = b'{"t":{"dtype":"U8","shape":[' + b"0," * 29_999_999 + b'0],"data_offsets":[0,0]}}'
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "st" / "model.safetensors").write_bytes(_shard(len(long), long))
    r, rss, _ = cli(["inspect", tmp_path / "st"])
    assert_hostile_ok(r, rss, (2,), ["entries"])
    from test_hf_hub import FakeHub  # lazy: that module skips itself without huggingface_hub

    hub = FakeHub()
    try:
        hub.repos["org/long"] = {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": _shard(len(long), long)}
        env = {**env, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url}
        r, rss, _ = cli(["inspect", "org/long"], env)
        assert_hostile_ok(r, rss, (2,), ["entries"])
    finally:
        hub.stop()
    assert rss <= MAX_RSS_MB
