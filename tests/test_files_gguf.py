"""GGUF reading: exact bytes from block sizes, agreement with gguf.GGUFReader, spec from metadata."""

from __future__ import annotations

import pytest

gguf = pytest.importorskip("gguf")

from files_fixtures import finish, TINY, write_llama_gguf  # noqa: E402

from tokspeed.files.footprint import footprint  # noqa: E402
from tokspeed.files.ggml_types import GGML_TYPE_NAMES, GGML_TYPES  # noqa: E402
from tokspeed.files.gguf_reader import read_gguf  # noqa: E402
from tokspeed.files.loader import open_model_file  # noqa: E402
from tokspeed.resolve import resolve_model  # noqa: E402

SHAPE = dict(TINY, d_model=256, d_ff=512, vocab=512)


def test_type_table_matches_gguf_py():
    ref = {int(t): (t.name, bs, ts) for t, (bs, ts) in gguf.GGML_QUANT_SIZES.items()}
    assert GGML_TYPE_NAMES == {i: name for i, (name, _, _) in ref.items()}
    assert all(ref[i] == v for i, v in GGML_TYPES.items())
    assert len(GGML_TYPES) >= 30


@pytest.fixture
def mixed(tmp_path):
    """Like a Q4_K_M file: Q4_K projections, Q6_K embedding and output, F32 norms."""
    return write_llama_gguf(tmp_path / "mixed.gguf", shape=SHAPE, weight_type="Q4_K", embd_type="Q6_K",
                            output_type="Q6_K")


def test_exact_bytes_from_block_sizes(mixed):
    d, f, v, L = 256, 512, 512, 2
    kv = 2 * 64
    q4k = lambda n: n // 256 * 144          # Q4_K: 256 weights in 144 bytes  # noqa: E731
    q6k = lambda n: n // 256 * 210          # Q6_K: 256 weights in 210 bytes  # noqa: E731
    per_layer = q4k(d * d) * 2 + q4k(kv * d) * 2 + q4k(f * d) * 3 + 2 * d * 4
    expected = q6k(v * d) * 2 + L * per_layer + d * 4
    mf = open_model_file(mixed)
    assert mf.storage.resident_bytes == expected
    g = read_gguf(mixed)
    assert sum(t.n_bytes for t in g.tensors) == expected
    assert mf.storage.element_bytes("attn_q", 0) == 144 / 256
    assert mf.storage.element_bytes("token_embd", None) == 210 / 256
    assert mf.storage.element_bytes("output", None) == 210 / 256
    assert mf.storage.element_bytes("norm", 1) == 4.0
    assert mf.storage.tensor_bytes("ffn_down", 1, d, f) == q4k(f * d)
    assert mf.storage.type_counts() == {"Q4_K": 14, "F32": 5, "Q6_K": 2}


def test_agrees_with_gguf_reader(mixed):
    ours = read_gguf(mixed)
    ref = gguf.GGUFReader(mixed)
    assert [t.name for t in ours.tensors] == [t.name for t in ref.tensors]
    for a, b in zip(ours.tensors, ref.tensors):
        assert a.dtype == b.tensor_type.name
        assert a.shape == tuple(reversed([int(x) for x in b.shape]))
        assert a.n_bytes == b.n_bytes
        assert a.offset == b.data_offset
    assert ours.data_offset == ref.data_offset
    for key in ("llama.block_count", "llama.embedding_length", "llama.attention.head_count_kv", "general.name"):
        assert ours.get(key) == ref.get_field(key).contents()


def test_spec_from_metadata(mixed):
    spec, storage = resolve_model(str(mixed))
    assert (spec.n_layers, spec.d_model, spec.n_heads, spec.n_kv_heads, spec.d_ff, spec.vocab_size) == \
        (2, 256, 4, 2, 512, 512)
    assert spec.head_dim == 64 and not spec.tied_embeddings and spec.gated_mlp
    assert spec.rope_theta == 10000.0 and spec.max_context == 2048
    assert storage is not None
    # the file holds exactly the parameters the spec counts
    assert sum(e.elements for e in storage.entries) == spec.n_params


def test_tied_when_no_output_tensor(tmp_path):
    p = write_llama_gguf(tmp_path / "tied.gguf", shape=dict(SHAPE, tied=True), weight_type="Q8_0")
    mf = open_model_file(p)
    assert mf.spec.tied_embeddings
    fp = footprint(mf)
    embd = 512 * 256 // 32 * 34
    # a tied model reads the embedding table whole as its LM head, one row of it as the lookup
    assert fp["components"]["lm_head"]["read_bytes_per_token"] == embd
    assert fp["components"]["lm_head"]["resident_bytes"] == 0
    assert fp["components"]["embedding"]["read_bytes_per_token"] == embd / 512
    assert mf.storage.element_bytes("output", None) == 34 / 32


def test_moe_experts_read_share(tmp_path):
    moe = dict(n_experts=8, n_active=2, d_ff_expert=256)
    p = write_llama_gguf(tmp_path / "moe.gguf", shape=SHAPE, weight_type="Q8_0", moe=moe)
    mf = open_model_file(p)
    s = mf.spec
    assert (s.n_experts, s.n_active_experts, s.d_ff_expert, s.d_ff) == (8, 2, 256, 0)
    fp = footprint(mf)
    experts = 2 * 3 * 8 * 256 * 256 // 32 * 34            # layers x (gate, up, down) x experts x elements
    assert fp["components"]["experts"]["resident_bytes"] == experts
    assert fp["components"]["experts"]["read_bytes_per_token"] == experts * 2 / 8
    assert fp["components"]["router"]["resident_bytes"] == 2 * 8 * 256 * 4
    assert sum(e.elements for e in mf.storage.entries) == s.n_params
    assert mf.storage.tensor_bytes("ffn_up_exps", 1, 8 * 256, 256) == experts / 6


def test_footprint_totals_add_up(mixed):
    fp = footprint(open_model_file(mixed))
    comps = fp["components"]
    assert fp["totals"]["resident_bytes"] == sum(c["resident_bytes"] for c in comps.values())
    # everything but the embedding is read whole in a dense untied model; the embedding reads one row
    embd = comps["embedding"]["resident_bytes"]
    assert fp["totals"]["read_bytes_per_token"] == pytest.approx(fp["totals"]["resident_bytes"] - embd + embd / 512)
    assert fp["kv_bytes_per_context_token"] == 2 * 2 * (2 * 64) * 2    # layers x (K,V) x kv_dim x f16


def test_split_gguf_and_missing_shard(tmp_path):
    import numpy as np

    w = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama", split_max_tensors=2)
    w.add_block_count(1)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_feed_forward_length(128)
    w.add_tensor("token_embd.weight", np.zeros((32, 64), np.float16))
    w.add_tensor("blk.0.attn_norm.weight", np.zeros(64, np.float32))
    w.add_tensor("output.weight", np.zeros((32, 64), np.float16))
    finish(w)
    files = sorted(tmp_path.glob("m-*.gguf"))
    assert [f.name for f in files] == ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]
    mf = open_model_file(files[0])
    assert {t.tensor.name for t in mf.storage.entries} == {"token_embd.weight", "blk.0.attn_norm.weight",
                                                          "output.weight"}
    assert mf.storage.resident_bytes == 2 * 32 * 64 * 2 + 64 * 4
    files[1].unlink()
    from tokspeed.errors import UserError

    with pytest.raises(UserError, match="missing shard m-00002-of-00002.gguf"):
        open_model_file(files[0])


def test_big_endian_file(tmp_path):
    import numpy as np

    p = tmp_path / "be.gguf"
    w = gguf.GGUFWriter(str(p), "llama", endianess=gguf.GGUFEndian.BIG)
    w.add_block_count(1)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_feed_forward_length(128)
    w.add_token_list([f"t{i}" for i in range(100)])               # a lazy (> 64 element) string array
    w.add_tensor("token_embd.weight", np.zeros((100, 64), np.float16))
    w.add_tensor("blk.0.attn_q.weight", np.zeros((64, 64), np.float32))
    finish(w)
    g = read_gguf(p)
    assert g.get("llama.block_count") == 1 and g.get("llama.embedding_length") == 64
    assert g.get("tokenizer.ggml.tokens").values()[99] == "t99"
    assert [(t.name, t.dtype, t.shape, t.n_bytes) for t in g.tensors] == [
        ("token_embd.weight", "F16", (100, 64), 100 * 64 * 2), ("blk.0.attn_q.weight", "F32", (64, 64), 64 * 64 * 4)]


def test_inspect_cli_human_and_json(mixed, capsys):
    import json

    from tokspeed.cli.main import main

    assert main(["inspect", str(mixed)]) == 0
    out = capsys.readouterr().out
    for text in ("architecture llama", "token embedding", "LM head", "total weights", "Q4_K x14", "KV cache"):
        assert text in out
    assert main(["inspect", str(mixed), "--json", "--kv-dtype", "q8_0"]) == 0
    fp = json.loads(capsys.readouterr().out)
    assert fp["file_bytes"] == mixed.stat().st_size > fp["totals"]["resident_bytes"]
    assert fp["kv_bytes_per_context_token"] == 2 * 2 * 128 * 34 / 32     # layers x (K,V) x kv_dim x q8_0
    assert set(fp["components"]) == {"embedding", "attention", "ffn", "lm_head", "norms"}
