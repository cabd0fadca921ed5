"""A model file's own tokenizer: ``tokenizer.json`` (Hugging Face) or the vocabulary inside a GGUF.

- ``tokenizer.json``: the ``tokenizers`` package, exactly as the model ships it.
- GGUF ``tokenizer.ggml.model == "gpt2"`` (byte-level BPE: Llama 3, Qwen, SmolLM, GPT-2...): a
  ``tokenizers`` BPE built from ``tokenizer.ggml.tokens`` + ``merges``, with the byte-level
  pre-tokenizer. The split regex is GPT-2's, or Llama 3's for the ``tokenizer.ggml.pre`` names
  that use it; other ``pre`` variants (e.g. digit splitting rules) may differ by a few tokens.
- GGUF ``"llama"`` (SentencePiece): ``spm.SpmTokenizer`` (BPE by score, llama.cpp's algorithm).
- Other GGUF tokenizer models (bert/WPM, t5/UGM, rwkv) are refused with a UserError.
Counts include the BOS token when the model adds one (``add_bos_token``), as an engine would.
"""

from __future__ import annotations

from ..errors import UserError
from ..userfile import MAX_TOKENIZER_BYTES, read_bytes
from .model_file import ModelFile
from .spm import SpmTokenizer

# the split regex of llama.cpp's LLAMA_VOCAB_PRE_TYPE_LLAMA3 (also used by the pre names below)
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PRE = {"llama3", "llama-bpe", "llama-v3", "dbrx", "smaug-bpe", "qwen2", "deepseek-r1-qwen", "tekken"}
# llama.cpp sets ignore_merges (a word already in the vocabulary is one token) for Llama 3 only
IGNORE_MERGES_PRE = {"llama3", "llama-bpe", "llama-v3"}


class CountingTokenizer:
    def __init__(self, name: str, encode, kind: str):
        self.name, self._encode, self.kind = name, encode, kind

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def count(self, text: str) -> int:
        return len(self._encode(text))


def load_tokenizer(mf: ModelFile) -> CountingTokenizer:
    if mf.tokenizer_json is not None:
        from tokenizers import Tokenizer  # lazy: optional dependency (tokenizers, the files extra)


        _, data = read_bytes(mf.tokenizer_json, "tokenizer.json", cap=MAX_TOKENIZER_BYTES)
        try:
            tok = Tokenizer.from_str(data.decode("utf-8", errors="replace"))
        except Exception as e:  # the tokenizers package raises its own Exception types
            raise UserError(f"{mf.tokenizer_json}: cannot load ({str(e)[:80]})") from None
        return CountingTokenizer(str(mf.tokenizer_json), lambda t: tok.encode(t, add_special_tokens=True).ids,
                                 "tokenizer.json")
    if mf.gguf is None:
        raise UserError(f"{mf.path}: no tokenizer.json and no GGUF vocabulary to count tokens with")
    return gguf_tokenizer(mf.gguf)


def _array(g, key: str, kind: type | tuple, required: bool = True) -> list:
    """A metadata array checked element by element (a file's claim is never trusted)."""
    v = g.get(key)
    if v is None and not required:
        return []
    if hasattr(v, "values") and not isinstance(v, dict):
        v = v.values()
    if not isinstance(v, list) or not all(isinstance(x, kind) and not isinstance(x, bool) for x in v):
        raise UserError(f"{g.path}: {key} is not an array of {getattr(kind, '__name__', 'numbers')}")
    return v


def _int_or_none(g, key: str):
    v = g.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def gguf_tokenizer(g) -> CountingTokenizer:
    model = g.get("tokenizer.ggml.model")
    if model is None or g.get("tokenizer.ggml.tokens") is None:
        raise UserError(f"{g.path}: the GGUF holds no tokenizer (tokenizer.ggml.model/tokens)")
    tokens = _array(g, "tokenizer.ggml.tokens", str)
    bos = _int_or_none(g, "tokenizer.ggml.bos_token_id")
    if model == "gpt2":
        return _bpe(g, tokens, bos)
    if model == "llama":
        scores = _array(g, "tokenizer.ggml.scores", (int, float), required=False) or [0.0] * len(tokens)
        spm = SpmTokenizer(tokens, [float(s) for s in scores], unk_id=_int_or_none(g, "tokenizer.ggml.unknown_token_id") or 0,
                           bos_id=bos, add_bos=bool(g.get("tokenizer.ggml.add_bos_token", True)),
                           add_space_prefix=bool(g.get("tokenizer.ggml.add_space_prefix", True)))
        return CountingTokenizer(f"{g.path.name} (SentencePiece BPE by score)", spm.encode, "gguf-spm")
    raise UserError(f"{g.path}: tokenizer model {model!r} is not supported for counting",
                    "supported: gpt2 (byte-level BPE) and llama (SentencePiece); or use the model's tokenizer.json")


def _bpe(g, tokens: list[str], bos) -> CountingTokenizer:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # lazy: optional dependency (tokenizers, the files extra)

    merges_raw = _array(g, "tokenizer.ggml.merges", str, required=False)
    merges = []
    for m in merges_raw:
        a, sep, b = m.partition(" ")
        if not sep:
            raise UserError(f"{g.path}: bad BPE merge {m[:40]!r} (expected 'left right')")
        merges.append((a, b))
    vocab = {t: i for i, t in enumerate(tokens)}
    pre = str(g.get("tokenizer.ggml.pre", "default"))
    try:
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=pre in IGNORE_MERGES_PRE))
    except Exception as e:  # the tokenizers package raises its own Exception types
        raise UserError(f"{g.path}: cannot build the BPE tokenizer ({str(e)[:80]})") from None
    if pre in LLAMA3_PRE:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    add_bos = bool(g.get("tokenizer.ggml.add_bos_token", False)) and bos is not None
    prefix = [bos] if add_bos else []
    return CountingTokenizer(f"{g.path.name} (byte-level BPE, pre={pre})",
                             lambda t: prefix + tok.encode(t, add_special_tokens=False).ids, "gguf-bpe")
