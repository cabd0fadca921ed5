"""Bad model files: one error line, exit 2, no traceback, no hang, no memory blow-up."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest

pytest.importorskip("gguf")

from files_fixtures import finish, write_llama_gguf  # noqa: E402

from tokspeed.cli.main import main  # noqa: E402


def run_inspect(capsys, target) -> str:
    rc = main(["inspect", str(target)])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokspeed: error:"), err
    return lines[0]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return write_llama_gguf(tmp_path_factory.mktemp("g") / "good.gguf", weight_type="Q4_0").read_bytes()


def test_wrong_magic(tmp_path, capsys, good):
    p = tmp_path / "m.gguf"
    p.write_bytes(b"GGML" + good[4:])
    assert "not a GGUF file" in run_inspect(capsys, p)


def test_empty_and_tiny_files(tmp_path, capsys):
    p = tmp_path / "e.gguf"
    p.write_bytes(b"")
    assert "only 0 bytes" in run_inspect(capsys, p)
    p.write_bytes(b"GGUF\3\0\0\0")
    assert "only 8 bytes" in run_inspect(capsys, p)


@pytest.mark.parametrize("keep", [0.02, 0.3, 0.9, 0.999])
def test_truncated(tmp_path, capsys, good, keep):
    p = tmp_path / "t.gguf"
    p.write_bytes(good[: int(len(good) * keep)])
    assert "truncated" in run_inspect(capsys, p)


def test_absurd_counts(tmp_path, capsys, good):
    p = tmp_path / "c.gguf"
    p.write_bytes(good[:8] + struct.pack("<Q", 2**62) + good[16:])
    assert "claims 4,611,686,018,427,387,904 tensors" in run_inspect(capsys, p)
    p.write_bytes(good[:16] + struct.pack("<Q", 2**40) + good[24:])
    assert "metadata entries" in run_inspect(capsys, p)


def test_bad_version(tmp_path, capsys, good):
    p = tmp_path / "v.gguf"
    p.write_bytes(good[:4] + struct.pack("<I", 1) + good[8:])
    assert "version 1" in run_inspect(capsys, p)
    p.write_bytes(good[:4] + struct.pack("<I", 77) + good[8:])
    assert "unknown GGUF version 77" in run_inspect(capsys, p)


def _tensor_info_offset(data: bytes, name: bytes) -> int:
    """Offset of the n_dims field of tensor ``name`` in the tensor-info section."""
    i = data.index(struct.pack("<Q", len(name)) + name)
    return i + 8 + len(name)


def test_absurd_dims_and_unknown_type(tmp_path, capsys, good):
    name = b"blk.0.attn_q.weight"
    at = _tensor_info_offset(good, name)
    p = tmp_path / "d.gguf"
    p.write_bytes(good[:at] + struct.pack("<I", 1000) + good[at + 4:])
    assert "1000 dimensions" in run_inspect(capsys, p)
    p.write_bytes(good[:at + 4] + struct.pack("<Q", 2**60) + good[at + 12:])
    assert "impossible dimension" in run_inspect(capsys, p)
    type_at = at + 4 + 2 * 8
    p.write_bytes(good[:type_at] + struct.pack("<I", 250) + good[type_at + 4:])
    assert "unknown GGML type id 250" in run_inspect(capsys, p)


def test_non_utf8_names(tmp_path, capsys, good):
    p = tmp_path / "u.gguf"
    i = good.index(b"blk.0.attn_q.weight")
    p.write_bytes(good[:i] + b"\xff\xfe" + good[i + 2:])
    assert "not valid UTF-8" in run_inspect(capsys, p)
    i = good.index(b"general.architecture")
    p.write_bytes(good[:i] + b"\xc3\x28" + good[i + 2:])
    assert "not valid UTF-8" in run_inspect(capsys, p)


def test_string_array_count_absurd(tmp_path, capsys):
    import gguf

    p = tmp_path / "s.gguf"
    w = gguf.GGUFWriter(str(p), "llama")
    w.add_token_list(["a", "b", "c"])
    finish(w)
    data = p.read_bytes()
    key = b"tokenizer.ggml.tokens"
    at = data.index(key) + len(key) + 4 + 4        # value type ARRAY, item type STRING, then the count
    assert struct.unpack_from("<Q", data, at)[0] == 3
    p.write_bytes(data[:at] + struct.pack("<Q", 2**50) + data[at + 8:])
    assert "strings, more than the file can hold" in run_inspect(capsys, p)


# ---- safetensors ---------------------------------------------------------------------------
def _folder(tmp_path, payload: bytes):
    from files_fixtures import llama_config

    f = tmp_path / "st"
    f.mkdir(exist_ok=True)
    (f / "config.json").write_text(json.dumps(llama_config()))
    (f / "model.safetensors").write_bytes(payload)
    return f


def test_safetensors_header_larger_than_file(tmp_path, capsys):
    f = _folder(tmp_path, struct.pack("<Q", 10**12) + b"{}")
    assert "larger than the file" in run_inspect(capsys, f)


def test_safetensors_bad_json_and_utf8(tmp_path, capsys):
    h = b'{"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]'
    f = _folder(tmp_path, struct.pack("<Q", len(h)) + h + b"\0" * 4)
    assert "not valid JSON" in run_inspect(capsys, f)
    h = b'{"\xff": 1}'
    f = _folder(tmp_path, struct.pack("<Q", len(h)) + h)
    assert "not valid UTF-8" in run_inspect(capsys, f)


@pytest.mark.parametrize("entry,msg", [
    ({"dtype": "Q9", "shape": [2], "data_offsets": [0, 4]}, "unknown dtype"),
    ({"dtype": "F16", "shape": [2**50, 2**50], "data_offsets": [0, 4]}, "impossible shape"),
    ({"dtype": "F16", "shape": [2], "data_offsets": [0, 10**9]}, "truncated"),
    ({"dtype": "F16", "shape": [3], "data_offsets": [0, 4]}, "expected 6"),
    ({"dtype": "F16", "shape": [2], "data_offsets": [4, 0]}, "bad data_offsets"),
])
def test_safetensors_bad_entries(tmp_path, capsys, entry, msg):
    h = json.dumps({"model.embed_tokens.weight": entry}).encode()
    f = _folder(tmp_path, struct.pack("<Q", len(h)) + h + b"\0" * 4)
    assert msg in run_inspect(capsys, f)


def test_index_pointing_to_missing_shard(tmp_path, capsys):
    f = _folder(tmp_path, b"")
    (f / "model.safetensors").unlink()
    (f / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"x": "model-00001-of-00002.safetensors"}}))
    assert "missing shard" in run_inspect(capsys, f)


# ---- Ollama ---------------------------------------------------------------------------------
def test_manifest_pointing_nowhere(tmp_path, capsys, monkeypatch):
    root = tmp_path / "store"
    m = root / "manifests" / "registry.ollama.ai" / "library" / "ghost"
    m.mkdir(parents=True)
    (m / "latest").write_text(json.dumps({"layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + "ab" * 32}]}))
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    assert "which is missing" in run_inspect(capsys, "ollama:ghost")
    (m / "latest").write_text("{not json")
    assert "latest: not valid JSON" in run_inspect(capsys, "ollama:ghost")
    assert "not in the Ollama store" in run_inspect(capsys, "ollama:nobody:7b")
    assert "bad Ollama model name" in run_inspect(capsys, "ollama:../../etc")


def test_missing_file(capsys, tmp_path):
    assert "no such file" in run_inspect(capsys, tmp_path / "nope.gguf")


def test_subprocess_under_memory_limit(tmp_path, good):
    """The real CLI, under a 1 GiB address-space limit and a timeout: exit 2, one line, no traceback."""
    p = tmp_path / "huge-claims.gguf"
    name = b"blk.0.attn_q.weight"
    at = _tensor_info_offset(good, name)
    # a 4-D tensor of 2^40 x 2^40 x ... elements: a naive reader would try to map or allocate it
    p.write_bytes(good[:at] + struct.pack("<I", 2) + good[at + 4:at + 4] + struct.pack("<QQ", 2**40, 2**40)
                  + good[at + 20:])
    code = ("import resource,sys; resource.setrlimit(resource.RLIMIT_AS,(1<<30,1<<30)); "
            "from tokspeed.cli.main import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "inspect", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_unreadable_file(tmp_path, capsys, good):
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    p = tmp_path / "locked.gguf"
    p.write_bytes(good)
    p.chmod(0)
    assert "cannot read" in run_inspect(capsys, p)


def test_byte_array_count_absurd(tmp_path, capsys):
    """A uint8 array claiming 2^40 elements (gguf.GGUFReader loops on it): refused at once."""
    import time

    import gguf

    p = tmp_path / "a.gguf"
    w = gguf.GGUFWriter(str(p), "llama")
    w.add_key_value("test.arr", [1, 2, 3], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT8)
    finish(w)
    data = p.read_bytes()
    at = data.index(b"test.arr") + len(b"test.arr") + 4 + 4
    p.write_bytes(data[:at] + struct.pack("<Q", 2**40) + data[at + 8:])
    t = time.perf_counter()
    assert "claims 1,099,511,627,776 values" in run_inspect(capsys, p)
    assert time.perf_counter() - t < 5


@pytest.mark.parametrize("key,value", [("llama.block_count", float("inf")), ("llama.embedding_length", float("nan")),
                                       ("llama.attention.head_count", 2.5), ("llama.feed_forward_length", float("nan"))])
def test_integer_key_stored_as_non_integral_float(tmp_path, capsys, key, value):
    """Found by the fuzzer (issue 10): FLOAT32 inf/NaN in a count raised OverflowError/ValueError."""
    import gguf

    p = write_llama_gguf(tmp_path / "f.gguf", extra_kv={key: (value, gguf.GGUFValueType.FLOAT32)})
    line = run_inspect(capsys, p)
    assert key in line and "whole number" in line, line


def test_directory_without_permission_even_as_root(tmp_path, monkeypatch):
    """Path.is_file raised PermissionError for a file in a folder the user cannot enter (issue 10).
    Root enters any folder, so the refusal is simulated at the stat call."""
    import errno
    import pathlib

    from tokspeed.errors import UserError
    from tokspeed.userfile import path_kind

    target = tmp_path / "locked" / "config.json"
    real_stat = pathlib.Path.stat

    def stat(self, *a, **kw):
        if self == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_stat(self, *a, **kw)
    monkeypatch.setattr(pathlib.Path, "stat", stat)
    with pytest.raises(UserError, match="permission denied"):
        path_kind(target)


@pytest.mark.parametrize("header", [b'{"a": ' + b"1" * 5000 + b"}", b"[" * 100_000 + b"]" * 100_000,
                                    b'{"__metadata__": {"x": 1e309}}'])
def test_safetensors_header_digits_depth_infinity(tmp_path, capsys, header):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                                    "num_attention_heads": 2, "intermediate_size": 128,
                                                    "vocab_size": 64}))
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    line = run_inspect(capsys, folder)
    assert "model.safetensors" in line
