"""The served model's tokenizer, for exact-length prompts and for counting what the server did not count.

``--tokenizer`` is a Hugging Face ``tokenizer.json``, a GGUF (its own vocabulary) or a model folder;
the GGUF and folder cases go through ``tokspeed.files.tokenizer`` (the same reader as ``tokspeed
tokens``). Two counts:
- ``count(text)``: a whole prompt as the engine counts it, BOS included when the model adds one;
- ``count_fragment(text)``: the tokens inside one streamed chunk of output (no special tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..files.loader import open_model_file
from ..files.tokenizer import load_tokenizer
from ..userfile import MAX_TOKENIZER_BYTES, read_bytes


class TokenCounter:
    def __init__(self, name: str, count: Callable[[str], int], count_fragment: Callable[[str], int]):
        self.name, self.count, self.count_fragment = name, count, count_fragment


def load_counter(path: str) -> TokenCounter:
    p = Path(str(path)).expanduser()
    if p.suffix.lower() == ".json" or (p.is_file() and p.name == "tokenizer.json"):
        return _tokenizer_json(p)
    if not p.exists():
        raise UserError(f"no such tokenizer: {path}", "give a tokenizer.json, a .gguf or a Hugging Face model folder")
    try:
        import tokenizers  # noqa: F401  # lazy: optional dependency (tokenizers, the files extra; the GGUF BPE path builds one too)
    except ImportError:
        raise UserError("`tokenizer` needs the tokenizers package", "pip install 'tokspeed[files]'",
                        field="tokenizer") from None

    mf = open_model_file(str(p))
    if mf is None:
        raise UserError(f"{path}: not a tokenizer.json, GGUF or model folder")
    tok = load_tokenizer(mf)
    bos = tok.count("")  # 1 when the model adds BOS to every prompt, else 0
    return TokenCounter(tok.name, tok.count, lambda text: max(tok.count(text) - bos, 0))


def _tokenizer_json(p: Path) -> TokenCounter:
    try:
        from tokenizers import Tokenizer  # lazy: optional dependency (tokenizers, the files extra)
    except ImportError:
        raise UserError("`tokenizer` needs the tokenizers package", "pip install 'tokspeed[files]'",
                        field="tokenizer") from None

    # size checked before reading (a 2 GB file is refused at once); FIFOs, folders and links to them refused
    _, data = read_bytes(p, "tokenizer", "give a Hugging Face tokenizer.json", cap=MAX_TOKENIZER_BYTES)
    try:
        tok = Tokenizer.from_str(data.decode("utf-8", errors="replace"))
    except Exception as e:  # the tokenizers package raises its own exception types
        raise UserError(f"cannot read tokenizer {p}: {str(e)[:120]}") from None
    return TokenCounter(str(p), lambda text: len(tok.encode(text, add_special_tokens=True).ids),
                        lambda text: len(tok.encode(text, add_special_tokens=False).ids))


def load_token_counter(path: str) -> Callable[[str], int]:
    """``text -> tokens`` of a fragment (no special tokens): the per-chunk counter."""
    return load_counter(path).count_fragment
