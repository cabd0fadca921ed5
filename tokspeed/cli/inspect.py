"""`tokspeed inspect FILE [--json]`: what a model file holds, resident vs read per token, by component."""

from __future__ import annotations

from rich.table import Table

from ..errors import UserError
from ..files.footprint import footprint
from ..files.loader import open_model_file
from ..guard.console import safe_console
from ..report.text import markup_safe
from ..units import fmt_bytes
from .options import add_kv_dtype_option, print_json

LABELS = {"embedding": "token embedding", "attention": "attention", "ffn": "FFN (dense)",
          "experts": "experts (routed)", "shared_experts": "shared experts", "router": "router",
          "lm_head": "LM head", "per_layer": "AltUp, LAuReL, per-layer inputs", "norms": "norms", "other": "other layer weights", "vision": "vision/audio"}


def add_parser(sub):
    p = sub.add_parser("inspect", help="read a model file (GGUF, safetensors, HF folder, ollama:NAME): bytes by component")
    p.add_argument("file", metavar="FILE", help=".gguf, .safetensors, a Hugging Face folder or repo id, ollama:NAME[:TAG]")
    add_kv_dtype_option(p)
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    return p


def run(args) -> int:


    mf = open_model_file(args.file)
    if mf is None or mf.storage is None:
        raise UserError(f"{args.file}: not a model file with weights",
                        "give a .gguf, .safetensors, a Hugging Face folder with weights, or ollama:NAME")
    fp = footprint(mf, kv_dtype=args.kv_dtype)
    if args.json:
        print_json(fp)
        return 0
    _print(fp)
    return 0


def _print(fp: dict) -> None:

    con = safe_console()
    s = fp["shape"]
    con.print(f"[bold]{markup_safe(fp['model'])}[/] — {markup_safe(fp['format'])} {markup_safe(fp['quant'])}, "
              f"architecture {markup_safe(fp['architecture'])}, "
              f"{fp['params'] / 1e9:.3f} B params")
    moe = (f", {s['n_experts']} experts of d_ff {s['d_ff_expert']} ({s['n_active_experts']} active)"
           if s["n_experts"] else "")
    dense = f", d_ff {s['d_ff']}" if s["d_ff"] else ""
    con.print(f"{s['n_layers']} layers, d_model {s['d_model']}, {s['n_heads']} heads / {s['n_kv_heads']} KV heads "
              f"x {s['head_dim']}{dense}, vocab {s['vocab_size']}{moe}"
              f"{', tied embeddings' if fp['tied_embeddings'] else ''}")
    con.print("tensor types: " + markup_safe(", ".join(f"{k} x{v}" for k, v in fp["tensor_types"].items()))
              + f"; file size {fmt_bytes(fp['file_bytes'])}")
    t = Table(title="bytes by component")
    t.add_column("component")
    t.add_column("tensors", justify="right")
    t.add_column("resident", justify="right")
    t.add_column("read / token", justify="right")
    for k, v in fp["components"].items():
        t.add_row(markup_safe(LABELS.get(k, k)), str(v["tensors"]), fmt_bytes(v["resident_bytes"]), fmt_bytes(v["read_bytes_per_token"]))
    tot = fp["totals"]
    t.add_row("[bold]total weights", str(tot["tensors"]), f"[bold]{fmt_bytes(tot['resident_bytes'])}",
              f"[bold]{fmt_bytes(tot['read_bytes_per_token'])}")
    con.print(t)
    con.print(f"KV cache ({fp['kv_dtype']}): {fp['kv_bytes_per_context_token']:,.0f} bytes per context token "
              f"(+ that much read per token for every token already in context)")
