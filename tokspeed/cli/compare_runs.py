"""`tokspeed compare-runs A.json B.json ...`: measured runs side by side, point by point."""

from __future__ import annotations

import math

from rich.table import Table

from ..errors import UserError
from ..guard.console import safe_console
from ..guard.escape import markup
from ..measure.run_file import read_run
from .options import print_json


def add_parser(sub):
    p = sub.add_parser("compare-runs", help="compare RUN.json files from `tokspeed measure`, point by point",
                       description="Match the points of two or more run files by (batch, depth) and show decode "
                                   "and prefill tok/s, MBU and the ratio to the first run.")
    p.add_argument("runs", nargs="+", help="RUN.json files (the first is the baseline)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON on stdout")
    return p


def compare(runs: list[dict]) -> list[dict]:
    """One row per (batch, depth) present in the baseline: each run's decode/prefill tok/s and MBU,
    and decode speed-up relative to the baseline (None where a run lacks the point)."""
    rows = []
    base = runs[0]
    index = [{(p["batch"], p["context"]): p for p in r["points"]} for r in runs]
    for bp in base["points"]:
        key = (bp["batch"], bp["context"])
        row = {"batch": key[0], "context": key[1], "runs": []}
        for idx in index:
            p = idx.get(key)
            row["runs"].append(None if p is None else {
                "decode_tok_s": p.get("decode_tok_s"), "prefill_tok_s": p.get("prefill_tok_s"), "mbu": p.get("mbu"),
                "speedup": _ratio(p.get("decode_tok_s"), bp.get("decode_tok_s"))})
        rows.append(row)
    return rows


def _ratio(a, b):
    """a / b when both are positive and the quotient is finite (the text and --json agree); None otherwise."""
    if not a or not b:
        return None
    r = a / b
    return r if math.isfinite(r) else None


def _label(run: dict) -> str:
    return f"{run['model']['id']} {run['quant']} {run['backend']}/{run['device']} @ {run['hardware'].get('id', '?')}"


def run(args) -> int:

    if len(args.runs) < 2:
        raise UserError("compare-runs needs at least two run files")
    runs = [read_run(p) for p in args.runs]
    rows = compare(runs)
    if args.json:
        print_json({"runs": [{"path": p, "label": _label(r), "created": r["created"]}
                             for p, r in zip(args.runs, runs)], "points": rows})
        return 0
    con = safe_console()
    for i, (p, r) in enumerate(zip(args.runs, runs)):
        con.print(f"[bold]{chr(65 + i)}[/] = {markup(p)}: {markup(_label(r))} ({markup(r['created'])})")
    t = Table(title="decode tok/s (MBU) by point; × = speed-up over A")
    t.add_column("batch", justify="right")
    t.add_column("depth", justify="right")
    for i in range(len(runs)):
        t.add_column(chr(65 + i), justify="right")
    for row in rows:
        cells = []
        for i, c in enumerate(row["runs"]):
            if c is None or c["decode_tok_s"] is None:
                cells.append("-")
                continue
            mbu = f" ({c['mbu']:.0%})" if c.get("mbu") is not None and c["mbu"] <= 1 else ""  # above 1: no measurement
            cells.append(f"{c['decode_tok_s']:,.2f}{mbu}" + (f" ×{c['speedup']:.2f}" if i and c["speedup"] else ""))
        t.add_row(str(row["batch"]), str(row["context"]), *cells)
    con.print(t)
    return 0
