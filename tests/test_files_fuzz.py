"""Fuzzing the GGUF and safetensors header readers with mutated valid files (hypothesis).

Every mutated file must either read (and then inspect without error) or raise UserError — never
another exception, never a large allocation (sizes are checked against the file before use).
``RAN`` counts the inputs tried.

In CI (the "ci" hypothesis profile of conftest.py) the draws are derandomized — the same inputs on every
machine, with ``hypothesis`` and ``gguf`` pinned in pyproject — and there is no per-example deadline.
Every input that ever found a bug is kept below as an explicit ``@example``. To hunt for new ones, run
the longer randomized search (5,000 draws per test):

    TOKSPEED_HYPOTHESIS=fuzz python -m pytest -q tests/test_files_fuzz.py
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("gguf")
pytest.importorskip("safetensors")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from files_fixtures import TINY, byte_level_bpe, gpt2_tokenizer_kv, hf_llama_tensors, llama_config, \
    write_llama_gguf  # noqa: E402

from tokspeed.errors import UserError  # noqa: E402
from tokspeed.files.footprint import footprint  # noqa: E402
from tokspeed.files.loader import open_model_file  # noqa: E402

RAN = {"gguf": 0, "gguf_metadata": 0, "safetensors": 0, "safetensors_json": 0}
EXAMPLES = max(300, settings.default.max_examples)     # 300 in CI, more under the "fuzz" profile
WORK = Path(tempfile.mkdtemp(prefix="tokspeed-fuzz-"))


def _good_gguf() -> bytes:
    _, tokens, merges = byte_level_bpe(["hello world", "서울 식당"], vocab_size=300)
    shape = dict(TINY, d_model=32, d_ff=64, n_heads=2, n_kv_heads=1, vocab=len(tokens), n_layers=1)
    return write_llama_gguf(WORK / "seed.gguf", shape=shape, weight_type="Q8_0",
                            tokenizer=gpt2_tokenizer_kv(tokens[:8], merges[:4])).read_bytes()


def _good_safetensors() -> bytes:
    from safetensors.numpy import save

    shape = dict(TINY, d_model=32, d_ff=64, n_heads=2, n_kv_heads=1, vocab=64, n_layers=1)
    (WORK / "st").mkdir(exist_ok=True)
    (WORK / "st" / "config.json").write_text(json.dumps(llama_config(shape)))
    return save(hf_llama_tensors(shape))


GOOD = {}


def good(kind):
    if kind not in GOOD:
        GOOD[kind] = _good_gguf() if kind == "gguf" else _good_safetensors()
    return GOOD[kind]


def mutations(size_hint: int):
    pos = st.integers(0, size_hint)
    return st.lists(st.one_of(
        st.tuples(st.just("flip"), pos, st.integers(1, 255)),
        st.tuples(st.just("u64"), pos, st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**40, 2**63, 2**64 - 1])),
        st.tuples(st.just("u32"), pos, st.sampled_from([0, 1, 4, 8, 9, 13, 255, 2**31, 2**32 - 1])),
        st.tuples(st.just("cut"), pos, st.just(0)),
        st.tuples(st.just("insert"), pos, st.integers(0, 255)),
    ), min_size=1, max_size=4)


def mutate(data: bytes, ops, header_only: int) -> bytes:
    b = bytearray(data)
    for op, at, val in ops:
        if not b:
            break
        at = at % max(1, min(len(b), header_only))
        if op == "flip":
            b[at] ^= val
        elif op == "u64":
            b[at:at + 8] = struct.pack("<Q", val)
        elif op == "u32":
            b[at:at + 4] = struct.pack("<I", val)
        elif op == "cut":
            del b[at:]
        elif op == "insert":
            b[at:at] = bytes([val])
    return bytes(b)


def _check(path, tokenize=False):
    try:
        mf = open_model_file(path)
    except UserError:
        return
    footprint(mf)
    if tokenize:
        from tokspeed.files.tokenizer import load_tokenizer

        try:
            load_tokenizer(mf).count("hello 서울 123")
        except UserError:
            pass


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(ops=mutations(4096))
def test_fuzz_gguf(ops):
    data = good("gguf")
    header = data.index(b"token_embd.weight") + 4096          # mutate the header (+ a little data)
    path = WORK / "fuzz.gguf"
    path.write_bytes(mutate(data, ops, header))
    _check(path)
    RAN["gguf"] += 1


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(ops=mutations(4096))
def test_fuzz_safetensors(ops):
    data = good("safetensors")
    n = struct.unpack_from("<Q", data)[0]
    path = WORK / "st" / "model.safetensors"
    path.write_bytes(mutate(data, ops, 8 + n + 16))
    _check(path.parent)
    RAN["safetensors"] += 1


GGUF_KEYS = ["llama.block_count", "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
             "llama.attention.head_count_kv", "llama.attention.key_length", "llama.expert_count",
             "llama.expert_used_count", "llama.context_length", "llama.rope.freq_base", "general.alignment",
             "general.file_type", "general.architecture", "split.count", "llama.attention.kv_lora_rank",
             "llama.expert_shared_count", "llama.leading_dense_block_count", "llama.attention.sliding_window",
             "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.scores",
             "tokenizer.ggml.bos_token_id", "tokenizer.ggml.pre", "tokenizer.ggml.add_bos_token"]
GGUF_VALUE = st.one_of(
    st.tuples(st.just("UINT32"), st.integers(0, 2**32 - 1)), st.tuples(st.just("INT32"), st.integers(-2**31, 2**31 - 1)),
    st.tuples(st.just("UINT64"), st.integers(0, 2**64 - 1)), st.tuples(st.just("FLOAT32"), st.floats(width=32)),
    st.tuples(st.just("STRING"), st.text(max_size=10)), st.tuples(st.just("BOOL"), st.booleans()),
    st.tuples(st.just("ARRAY"), st.lists(st.integers(0, 2**31 - 1), max_size=80)),
    st.tuples(st.just("ARRAY"), st.lists(st.text(max_size=4), min_size=1, max_size=80)),
    st.tuples(st.just("STRING"), st.sampled_from(["gpt2", "llama", "bert", "llama-bpe"])))


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(keys=st.lists(st.tuples(st.sampled_from(GGUF_KEYS), GGUF_VALUE), min_size=1, max_size=3, unique_by=lambda kv: kv[0]))
# found by the fuzzer (issue 10): integer keys stored as FLOAT32 inf / NaN raised OverflowError / ValueError
@example(keys=[("llama.block_count", ("FLOAT32", float("inf")))])
@example(keys=[("llama.embedding_length", ("FLOAT32", float("nan")))])
@example(keys=[("llama.attention.head_count", ("FLOAT32", float("-inf")))])
@example(keys=[("llama.feed_forward_length", ("FLOAT32", float("nan")))])
@example(keys=[("llama.context_length", ("FLOAT32", float("inf")))])
@example(keys=[("llama.rope.freq_base", ("FLOAT32", float("nan")))])
def test_fuzz_gguf_metadata(keys):
    """Well-formed GGUF, wrong hyper-parameter values or types: UserError or a consistent reading."""
    import logging

    import gguf

    logging.getLogger("gguf").setLevel(logging.ERROR)
    extra = {}
    for key, (vtype, value) in keys:
        extra[key] = (value, getattr(gguf.GGUFValueType, vtype))
    shape = dict(TINY, d_model=32, d_ff=64, n_heads=2, n_kv_heads=1, vocab=16, n_layers=1)
    path = WORK / "meta.gguf"
    tokens = ["h", "e", "l", "o", "he", "ll", "hell", "hello"]
    try:
        write_llama_gguf(path, shape=shape, weight_type="Q8_0", extra_kv=extra,
                         tokenizer=gpt2_tokenizer_kv(tokens, ["h e", "l l", "he ll", "hell o"]))
    except (ValueError, KeyError, struct.error, TypeError):   # GGUFWriter refuses the value
        return
    _check(path, tokenize=True)
    RAN["gguf_metadata"] += 1


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
                    | st.text(max_size=12),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                    max_leaves=12)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, 10**6), field=st.sampled_from(["dtype", "shape", "data_offsets", None, "__metadata__"]),
       value=JSON)
def test_fuzz_safetensors_json(which, field, value):
    """Valid JSON, wrong values: a field of one entry (or the entry, or __metadata__) replaced."""
    data = good("safetensors")
    n = struct.unpack_from("<Q", data)[0]
    header = json.loads(data[8:8 + n])
    if field == "__metadata__":
        header["__metadata__"] = value
    else:
        names = sorted(k for k in header if k != "__metadata__")
        name = names[which % len(names)]
        if field is None:
            header[name] = value
        else:
            header[name][field] = value
    h = json.dumps(header).encode()
    path = WORK / "st" / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(h)) + h + data[8 + n:])
    _check(path.parent)
    RAN["safetensors_json"] += 1


def test_fuzz_ran():
    """Runs after the two fuzzers (file order): they tried their inputs, none crashed."""
    print(f"\nfuzz inputs run: {RAN}")
    assert all(v >= EXAMPLES * 0.5 for v in RAN.values())
