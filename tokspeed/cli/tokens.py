"""`tokspeed tokens TEXT --model FILE [--hardware HW] [--json]`: count tokens with the file's own
tokenizer and, on a hardware, what that count costs to prefill (as a prompt) and to decode (as output)."""

from __future__ import annotations

import sys

from ..errors import UserError
from ..extras import require
from ..files.loader import open_model_file
from ..files.tokenizer import load_tokenizer
from ..predict import predict
from ..units import fmt_seconds
from .options import print_json


def add_parser(sub):
    p = sub.add_parser("tokens", help="count tokens with a model file's own tokenizer, and their cost on a hardware")
    p.add_argument("text", metavar="TEXT", help="the text to tokenize ('-' reads stdin)")
    p.add_argument("--model", required=True, help=".gguf, Hugging Face folder/repo id with tokenizer.json, ollama:NAME")
    p.add_argument("--hardware", help="also show prefill and decode time of that many tokens on this hardware")
    p.add_argument("--engine", default=None, help="engine for the speed prediction (default: predict's default)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    return p


def count_tokens(model, text: str) -> dict:
    mf = open_model_file(model)
    if mf is None:
        raise UserError(f"{model}: counting tokens needs a model file with a tokenizer",
                        "give a .gguf, a Hugging Face folder with tokenizer.json, or ollama:NAME")
    tok = load_tokenizer(mf)
    ids = tok.encode(text)
    return {"model": mf.spec.id, "tokenizer": tok.name, "tokens": len(ids), "characters": len(text),
            "utf8_bytes": len(text.encode("utf-8")), "ids": ids}


def token_cost(model, hardware: str, n_tokens: int, engine: str | None = None) -> dict:
    """Prefill time of ``n_tokens`` as a prompt and decode time of ``n_tokens`` as output (one sequence)."""
    opts = {"engine": engine} if engine else {}
    d = predict(model, hardware, prompt=n_tokens, gen=n_tokens, **opts).to_dict()
    tok_s = d["decode"]["tok_s"]
    return {"hardware": d["hardware"], "engine": d["engine"],
            "prefill_tok_s": d["prefill"]["tok_s"], "prefill_s": d["prefill"]["seconds"],
            "decode_tok_s": tok_s, "decode_s": n_tokens / tok_s if tok_s else float("inf")}


def run(args) -> int:
    require("files", "tokenizers", what="tokens")

    text = sys.stdin.read() if args.text == "-" else args.text
    out = count_tokens(args.model, text)
    if args.hardware:
        out["cost"] = token_cost(args.model, args.hardware, out["tokens"], args.engine)
    if args.json:
        print_json(out, ensure_ascii=False)
        return 0

    print(f"{out['tokens']} tokens ({out['characters']} characters, {out['utf8_bytes']} UTF-8 bytes, "
          f"{out['utf8_bytes'] / max(1, out['tokens']):.2f} bytes/token) — {out['tokenizer']}")
    if "cost" in out:
        c = out["cost"]
        print(f"on {c['hardware']} ({c['engine']}): prefill {fmt_seconds(c['prefill_s'])} "
              f"at {c['prefill_tok_s']:,.0f} tok/s; generating as many tokens: {fmt_seconds(c['decode_s'])} "
              f"at {c['decode_tok_s']:,.1f} tok/s")
    return 0
