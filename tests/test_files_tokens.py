"""Token counting with a file's own tokenizer (GGUF vocab or tokenizer.json), and its cost."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("gguf")
pytest.importorskip("tokenizers")

from files_fixtures import TINY, byte_level_bpe, gpt2_tokenizer_kv, llama_config, spm_tokenizer_kv, \
    write_llama_gguf  # noqa: E402

from tokspeed.cli.main import main  # noqa: E402
from tokspeed.files.loader import open_model_file  # noqa: E402
from tokspeed.files.tokenizer import load_tokenizer  # noqa: E402

KO = "서울에서 맛있는 식당을 추천해 주세요"
EN = "Please recommend a good restaurant in Seoul"
# An English-heavy corpus (as the corpora of most open tokenizers are) with a little Korean.
CORPUS = [
    "Please recommend a good restaurant in the city.", "The restaurant in Seoul was good and the food was great.",
    "I would like to recommend this book to you.", "Where is a good place to eat in Seoul?",
    "Please tell me the way to the station.", "The model reads every weight once for each token.",
    "Memory bandwidth decides how fast a token is generated.", "A good restaurant serves good food.",
    "서울은 한국의 수도입니다.", "맛있는 음식을 좋아해요.",
] * 20


@pytest.fixture(scope="module")
def bpe():
    return byte_level_bpe(CORPUS, vocab_size=600)


@pytest.fixture(scope="module")
def bpe_gguf(tmp_path_factory, bpe):
    _, tokens, merges = bpe
    shape = dict(TINY, vocab=len(tokens))
    return write_llama_gguf(tmp_path_factory.mktemp("tok") / "bpe.gguf", shape=shape, weight_type="Q8_0",
                            tokenizer=gpt2_tokenizer_kv(tokens, merges))


def test_gguf_bpe_matches_the_trained_tokenizer(bpe, bpe_gguf):
    trained, _, _ = bpe
    ours = load_tokenizer(open_model_file(bpe_gguf))
    for text in (KO, EN, "hello   world\n\n  123456 don't", "🙂 emoji and ünïcödé"):
        assert ours.encode(text) == trained.encode(text).ids, text


def test_korean_costs_more_tokens_than_english(bpe, bpe_gguf):
    ours = load_tokenizer(open_model_file(bpe_gguf))
    ko, en = ours.count(KO), ours.count(EN)
    assert ko > en
    # byte-level BPE never needs more tokens than UTF-8 bytes (each Hangul syllable is 3 bytes)
    assert ko <= len(KO.encode("utf-8"))


def test_tokenizer_json_folder(tmp_path, bpe):
    trained, _, _ = bpe
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(llama_config(TINY)))
    trained.save(str(folder / "tokenizer.json"))
    tok = load_tokenizer(open_model_file(folder))
    assert tok.kind == "tokenizer.json"
    assert tok.encode(KO) == trained.encode(KO).ids


# SentencePiece vocabulary written by hand: ids 0-2 special, 3..258 the byte tokens <0x00>..<0xFF>
BYTES = [f"<0x{b:02X}>" for b in range(256)]
PIECES = {"\u2581": -1.0, "h": -2.0, "e": -2.0, "l": -2.0, "o": -2.0, "ll": -3.0, "he": -4.0, "\u2581h": -5.0,
          "llo": -6.0, "hell": -7.0, "hello": -7.5}


def _spm_gguf(tmp_path, pieces):
    tokens = ["<unk>", "<s>", "</s>"] + BYTES + list(pieces)
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + list(pieces.values())
    p = write_llama_gguf(tmp_path / "spm.gguf", shape=dict(TINY, vocab=len(tokens)), weight_type="Q8_0",
                         tokenizer=spm_tokenizer_kv(tokens, scores))
    return load_tokenizer(open_model_file(p)), {t: i for i, t in enumerate(tokens)}


def test_spm_merges_by_score(tmp_path):
    tok, ids = _spm_gguf(tmp_path, PIECES)
    # "▁hello": ll (-3), then he (-4), then llo (-6), then hello (-7.5); "▁hello" is not a piece
    assert tok.encode("hello") == [1, ids["\u2581"], ids["hello"]]
    tok2, ids2 = _spm_gguf(tmp_path, dict(PIECES, **{"\u2581hello": -8.0}))
    assert tok2.encode("hello") == [1, ids2["\u2581hello"]]


def test_spm_byte_fallback(tmp_path):
    tok, ids = _spm_gguf(tmp_path, PIECES)
    # "é" is no piece: its UTF-8 bytes C3 A9 become <0xC3> <0xA9> (ids 3 + byte)
    assert tok.encode("hé") == [1, ids["\u2581h"], 3 + 0xC3, 3 + 0xA9]


def test_tokens_cli_json(bpe_gguf, capsys):
    assert main(["tokens", KO, "--model", str(bpe_gguf), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == len(out["ids"]) and out["characters"] == len(KO)
    assert out["utf8_bytes"] == len(KO.encode("utf-8"))


def test_tokens_cli_cost_on_hardware(bpe_gguf, capsys):
    from tokspeed.predict import predict

    assert main(["tokens", EN, "--model", str(bpe_gguf), "--hardware", "rtx-4090", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    n = out["tokens"]
    p = predict(str(bpe_gguf), "rtx-4090", prompt=n, gen=n)
    assert out["cost"]["prefill_s"] == pytest.approx(p.prefill.seconds)
    assert out["cost"]["decode_s"] == pytest.approx(n / p.decode.tok_s)


def test_tokens_cli_errors(tmp_path, capsys):
    p = write_llama_gguf(tmp_path / "notok.gguf", weight_type="Q8_0")
    assert main(["tokens", "hi", "--model", str(p)]) == 2
    assert "holds no tokenizer" in capsys.readouterr().err
    assert main(["tokens", "hi", "--model", "llama-3-8b"]) == 2
    assert "needs a model file" in capsys.readouterr().err


def test_llama3_pre_tokenizer_rules(tmp_path):
    """pre=llama-bpe: digits split in groups of at most 3 (Llama 3's regex) and a word that is
    already a token stays one token (ignore_merges); the GPT-2 default does neither."""
    from tokenizers.pre_tokenizers import ByteLevel

    base = sorted(ByteLevel.alphabet())
    extra = ["12", "123", "45", "456", "123456", "hello"]
    merges = ["1 2", "12 3", "4 5", "45 6", "123 456"]
    tokens = base + extra
    ids = {t: i for i, t in enumerate(tokens)}
    counts = {}
    for pre in ("default", "llama-bpe"):
        p = write_llama_gguf(tmp_path / f"{pre}.gguf", shape=dict(TINY, vocab=len(tokens)), weight_type="Q8_0",
                             tokenizer=gpt2_tokenizer_kv(tokens, merges, pre=pre))
        tok = load_tokenizer(open_model_file(p))
        counts[pre] = (tok.encode("123456"), tok.count("hello"))
    assert counts["default"] == ([ids["123456"]], 5)
    assert counts["llama-bpe"] == ([ids["123"], ids["456"]], 1)
