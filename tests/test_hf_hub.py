"""Any Hugging Face repository by id, against a fake hub on 127.0.0.1 (tokspeed.files.hf_hub).

The fake hub serves the real layout: ``/ORG/NAME/resolve/REV/FILE`` answering HEAD (X-Repo-Commit, ETag,
Content-Length, as huggingface_hub expects) and GET with Range (206 + Content-Range), a gated repo (401,
X-Error-Code GatedRepo) and missing repos/files (404, RepoNotFound / EntryNotFound). It counts the bytes
of .safetensors files it sends, so the tests can check that no weights were downloaded.
"""

import hashlib
import os
import json
import struct
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("huggingface_hub")

from conftest import run_cli  # noqa: E402

from tokspeed import predict  # noqa: E402
from tokspeed.errors import UserError  # noqa: E402
from tokspeed.files.loader import open_model_file  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CFG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "hidden_size": 64,
       "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
       "tie_word_embeddings": False, "max_position_embeddings": 512}


def _tensors():
    """name -> shape of the tiny Llama (HF names), BF16."""
    t = {"model.embed_tokens.weight": (256, 64), "lm_head.weight": (256, 64), "model.norm.weight": (64,)}
    for i in range(2):
        p = f"model.layers.{i}."
        t.update({p + "self_attn.q_proj.weight": (64, 64), p + "self_attn.k_proj.weight": (32, 64),
                  p + "self_attn.v_proj.weight": (32, 64), p + "self_attn.o_proj.weight": (64, 64),
                  p + "mlp.gate_proj.weight": (128, 64), p + "mlp.up_proj.weight": (128, 64),
                  p + "mlp.down_proj.weight": (64, 128), p + "input_layernorm.weight": (64,),
                  p + "post_attention_layernorm.weight": (64,)})
    return t


def _safetensors(shapes: dict) -> bytes:
    header, off = {}, 0
    for name, shape in shapes.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(off)


def _repos():
    t = _tensors()
    names = sorted(t)
    a, b = {n: t[n] for n in names[:10]}, {n: t[n] for n in names[10:]}
    shard = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    index = {"metadata": {}, "weight_map": {**{n: shard[0] for n in a}, **{n: shard[1] for n in b}}}
    sharded = {"config.json": json.dumps(CFG).encode(), "model.safetensors.index.json": json.dumps(index).encode(),
               shard[0]: _safetensors(a), shard[1]: _safetensors(b)}
    single = {"config.json": json.dumps(CFG).encode(), "model.safetensors": _safetensors(t)}
    return {"org/tiny": sharded, "org/single": single, "org/gated": sharded}


class FakeHub:
    def __init__(self):
        self.repos = _repos()
        self.weight_bytes_sent = 0
        self.requests = 0
        self.commit = COMMIT      # what the hub says the commit is
        self.mode = None          # a hostile hub: "500", "norange" (400 MB bodies), "drip" (config.json)
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _route(self, head):
                hub.requests += 1
                parts = self.path.split("?")[0].strip("/").split("/")
                if len(parts) < 5 or parts[2] != "resolve":
                    return self._error(404, "RepoNotFound")
                repo, fname = "/".join(parts[:2]), "/".join(parts[4:])
                if hub.mode and hub.hostile(self, head, fname):
                    return
                if repo == "org/gated" and "authorization" not in {k.lower() for k in self.headers}:
                    return self._error(401, "GatedRepo", "Access to model org/gated is restricted.")
                if repo not in hub.repos:
                    return self._error(404, "RepoNotFound")
                data = hub.repos[repo].get(fname)
                if data is None:
                    return self._error(404, "EntryNotFound")
                start, end, status = 0, len(data) - 1, 200
                rng = self.headers.get("Range")
                if rng and not head:
                    a, _, b = rng.removeprefix("bytes=").partition("-")
                    start, end, status = int(a), min(int(b), len(data) - 1), 206
                body = data[start:end + 1]
                self.send_response(status)
                self.send_header("X-Repo-Commit", hub.commit)
                self.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
                self.send_header("Content-Length", str(len(data) if head else len(body)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                self.end_headers()
                if not head:
                    if fname.endswith(".safetensors"):
                        hub.weight_bytes_sent += len(body)
                    self.wfile.write(body)

            def _error(self, code, err, msg="not found"):
                self.send_response(code)
                self.send_header("X-Error-Code", err)
                self.send_header("X-Error-Message", msg)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_HEAD(self):
                self._route(True)

            def do_GET(self):
                self._route(False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def hostile(self, h, head: bool, fname: str) -> bool:
        """Answer as a hostile hub would; False to answer normally."""
        if self.mode == "500":
            h.send_response(500)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return True
        if head:
            return False
        data = self.repos["org/tiny"].get(fname)
        try:
            if self.mode == "norange" and fname.endswith(".safetensors"):
                h.send_response(200)
                h.send_header("Content-Length", str(400 * 2**20))
                h.end_headers()
                h.wfile.write(data)
                for _ in range(400):
                    h.wfile.write(bytes(2**20))
                return True
            if self.mode == "drip" and fname == "config.json":
                h.send_response(200)
                h.send_header("X-Repo-Commit", COMMIT)
                h.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
                h.send_header("Content-Length", str(len(data)))
                h.end_headers()
                for b in data:
                    h.wfile.write(bytes([b]))
                    h.wfile.flush()
                    time.sleep(1)
                return True
        except OSError:
            return True
        return False

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub(tmp_path, monkeypatch):
    h = FakeHub()
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", h.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield h
    h.stop()


# the tiny Llama by hand: embed + lm_head 2 x 256 x 64, per layer q,o 64x64, k,v 32x64, gate,up 128x64,
# down 64x128, two norms of 64; final norm 64 -> parameters, at 2 bytes (BF16)
PARAMS = 2 * 256 * 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 128 * 64 + 2 * 64) + 64
EMBED_BYTES = 256 * 64 * 2       # the token embedding, which llama.cpp (the default engine) keeps in host RAM


def test_sharded_repo_read_from_headers_only(hub):
    mf = open_model_file("org/tiny")
    assert mf.kind == "safetensors" and mf.spec.n_layers == 2 and mf.spec.n_kv_heads == 2
    assert mf.spec.n_params == PARAMS
    assert sum(e.tensor.n_bytes for e in mf.storage.entries) == 2 * PARAMS
    # only the two headers (8-byte length + JSON) of each shard came over the wire, never the weights
    headers = sum(8 + struct.unpack("<Q", f[:8])[0] for n, f in hub.repos["org/tiny"].items() if n.endswith(".safetensors"))
    assert hub.weight_bytes_sent == headers < 2 * PARAMS


def test_single_file_repo_and_predict(hub):
    p = predict("org/single", "rtx-4090")
    assert p.model == "org/single" and p.memory.weights_bytes == 2 * PARAMS - EMBED_BYTES
    assert p.memory.host_bytes == EMBED_BYTES


def test_second_read_uses_the_cache_offline(hub, monkeypatch):
    first = open_model_file("org/tiny")
    hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = open_model_file("org/tiny")
    assert again.kind == "safetensors" and again.spec == first.spec
    assert [e.tensor.n_bytes for e in again.storage.entries] == [e.tensor.n_bytes for e in first.storage.entries]


def test_offline_and_not_cached_says_it_needs_the_network(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="needs the network"):
        open_model_file("org/tiny")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.stop()                                 # the hub unreachable: the same one line
    with pytest.raises(UserError, match="needs the network"):
        open_model_file("org/single")


def test_gated_repo_401(hub):
    with pytest.raises(UserError, match="gated") as e:
        open_model_file("org/gated")
    assert "HF_TOKEN" in str(e.value)


def test_gated_repo_with_token(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    assert open_model_file("org/gated").spec.n_params == PARAMS


def test_missing_repo_404(hub):
    with pytest.raises(UserError, match="no Hugging Face repository 'org/nope'"):
        open_model_file("org/nope")


def test_catalog_alias_needs_no_network(hub):
    hub.stop()
    assert predict("Qwen/QwQ-32B", "h100-sxm").model == "qwq-32b"


def test_cli_one_line_errors_and_json(hub):
    env_ok = run_cli("predict", "org/tiny", "--hardware", "rtx-4090", "--json")
    assert env_ok.returncode == 0, env_ok.stderr
    mem = json.loads(env_ok.stdout)["memory"]
    assert mem["weights_bytes"] + mem["host_bytes"] == 2 * PARAMS and mem["host_bytes"] == EMBED_BYTES
    for repo, word in (("org/gated", "gated"), ("org/nope", "no Hugging Face repository")):
        r = run_cli("predict", repo, "--hardware", "rtx-4090")
        assert r.returncode == 2 and word in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("shard", ["ABS", "sub/model.safetensors", "..\\model.safetensors"])
def test_a_shard_named_by_a_path_is_refused_and_nothing_is_written_outside_the_cache(hub, tmp_path, shard):
    """An index naming a shard by an absolute path made tokspeed write a file the hub chose (the '..' check
    passed it): ``<cache>/... / '/abs/x.safetensors'`` is ``/abs/x.safetensors.json``."""
    outside = tmp_path / "outside" / "evil.safetensors"
    shard = str(outside) if shard == "ABS" else shard
    repo = dict(hub.repos["org/tiny"])
    repo["model.safetensors.index.json"] = json.dumps({"weight_map": {"model.embed_tokens.weight": shard}}).encode()
    repo[shard.lstrip("/")] = repo["model-00001-of-00002.safetensors"]
    hub.repos["org/evil"] = repo
    with pytest.raises(UserError, match="not a plain file name"):
        open_model_file("org/evil")
    assert not (tmp_path / "outside").exists()


def test_a_hub_answering_500_is_one_line_at_once(hub):
    """It printed 12 retry lines and then blamed the network."""
    hub.mode = "500"
    t = time.perf_counter()
    with pytest.raises(UserError, match="answered HTTP 500"):
        open_model_file("org/tiny")
    assert time.perf_counter() - t < 10


def test_a_hub_ignoring_range_is_read_in_bounded_memory(hub):
    """A hub ignoring Range (400 MB bodies) took 839 MB."""
    hub.mode = "norange"
    tracemalloc.start()
    try:
        mf = open_model_file("org/tiny")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert mf.spec.n_params == PARAMS
    assert peak < 64 * 2**20


def test_a_hub_dripping_config_json_ends(hub, monkeypatch):
    """A hub sending config.json a byte a second never let tokspeed exit."""
    from tokspeed.files import hf_hub

    monkeypatch.setattr(hf_hub, "HUB_DEADLINE_S", 2.0)
    hub.mode = "drip"
    t = time.perf_counter()
    with pytest.raises(UserError, match="no complete answer within 2 s"):
        open_model_file("org/tiny")
    assert time.perf_counter() - t < 10


@pytest.mark.parametrize("weight_map", [{"a": ["x.safetensors"]}, {"a": {"b": 1}}, {"a": 5}, [1, 2], "x"])
def test_an_index_of_the_wrong_shape_is_one_line(hub, weight_map):
    repo = dict(hub.repos["org/tiny"])
    repo["model.safetensors.index.json"] = json.dumps({"weight_map": weight_map}).encode()
    hub.repos["org/odd"] = repo
    with pytest.raises(UserError, match="model.safetensors.index.json"):
        open_model_file("org/odd")


@pytest.mark.parametrize("commit", ["..", "../../../outside", "/abs/outside"])
def test_a_hub_naming_its_commit_by_a_path_writes_nothing_outside(hub, tmp_path, commit):
    hub.commit = commit
    before = set(os.listdir(tmp_path))
    try:
        open_model_file("org/tiny")
    except UserError:
        pass
    assert set(os.listdir(tmp_path)) <= before | {"hf", "cache"}
    assert not os.path.exists("/abs/outside") and not (tmp_path.parent / "outside").exists()
    for root, _, names in os.walk(tmp_path / "cache"):
        assert str(root).startswith(str(tmp_path / "cache" / "tokspeed" / "hf-headers")), root
