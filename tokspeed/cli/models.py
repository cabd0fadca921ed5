"""`tokspeed models [FILTER] [--json]`: list or search the built-in model catalog."""

from __future__ import annotations

import re
import sys

from ..errors import did_you_mean
from ..models.catalog import DATA, get_model, load_entry_raw, model_ids
from ..models.markers import markers
from ..report.console import make_console
from ..report.text import FitTable
from .options import print_json


def add_parser(sub):
    p = sub.add_parser("models", help="list or search the built-in model catalog",
                       description="List the catalog's models (shape, parameters, context, source). "
                                   "FILTER matches id, name, family, aliases or a marker (moe, mla, swa), "
                                   "case-insensitive.")
    p.add_argument("filter", nargs="?", default="", metavar="FILTER", help="e.g. llama, qwen3, moe")
    p.add_argument("--json", action="store_true", help="print the matching entries as JSON on stdout")
    return p


def _count(n: float) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


def _context(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def _repo(m) -> str:
    """The Hugging Face repository the entry describes (its config source for the original entries)."""
    return m.hf_repo or m.source.removeprefix("https://huggingface.co/").removesuffix("/blob/main/config.json")


def _order(m):
    """Catalog order: by series (the id without a trailing size like -7b), then by size."""
    series = re.sub(r"-\d+(\.\d+)?[bm]$", "", m.id)
    return (series, m.n_params)


def matching(text: str):
    """(spec, aliases) for catalog entries whose id, name, family, aliases or markers contain TEXT."""
    key = text.strip().lower()
    out = []
    for m in sorted((get_model(mid) for mid in model_ids()), key=_order):
        mid = m.id
        aliases = list(load_entry_raw(DATA / f"{mid}.toml").get("aliases", []))
        hay = " ".join([mid, m.name, m.family, *aliases, *markers(m)]).lower()
        if key in hay:
            out.append((m, aliases))
    return out


def to_json(m, aliases) -> dict:
    d = m.to_dict()
    d.update(aliases=aliases, n_params=m.n_params, n_active_params=m.n_active_params,
             kv_elements_per_token_layer=m.kv_elements_per_token_layer, markers=markers(m))
    return d


def run(args) -> int:
    rows = matching(args.filter)
    if not rows:
        hint = did_you_mean(args.filter, model_ids())
        sys.stderr.write(f"tokspeed: no catalog model matches {args.filter!r}"
                         f"{' (' + hint + ')' if hint else ''}; `tokspeed models` lists them all\n")
    if args.json:
        print_json([to_json(m, a) for m, a in rows])
        return 0

    t = FitTable(title=f"{len(rows)} model(s)")
    # catalog entries may say what a model is for (``use``) and name their Hugging Face repo (``hf_repo``)
    for col, num, drop in (("id", False, 0), ("params", True, 0), ("active", True, 0), ("layers", True, 3),
                           ("d_model", True, 4), ("heads/kv", True, 2), ("context", True, 0),
                           ("features", False, 1), ("use", False, 6), ("huggingface.co/...", False, 5)):
        t.column(col, numeric=num, drop=drop, min_width=10, whole=col == "id")
    for m, _ in rows:
        repo = _repo(m)
        t.row(m.id, _count(m.n_params), _count(m.n_active_params) if m.is_moe else "", str(m.n_layers),
              str(m.d_model), f"{m.n_heads}/{m.n_kv_heads}", _context(m.max_context),
              ", ".join(markers(m)), ",".join(m.use), repo)
    t.print(make_console())
    return 0
