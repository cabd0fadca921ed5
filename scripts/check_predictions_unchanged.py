"""Record, then compare, every number ``predict`` gives on the calibration rows and the seven scale setups.

A refactor that must not move a prediction (issue #25: the rates' one home) is checked in two runs: the first,
on the tree before it, writes the baseline; the second, after it, compares every number of every
``predict(...).to_dict()`` and prints the largest relative change (target <= 1e-9)::

    python scripts/check_predictions_unchanged.py --record /tmp/predictions-before.json
    python scripts/check_predictions_unchanged.py --compare /tmp/predictions-before.json

The cases: every row of ``data/validation/calibration.csv`` that ``predict`` answers (the row's model, device,
weight format, engine and era, with the shipped engine profiles; skipped rows too), each with FlashAttention as
the era runs it and, for llama.cpp backends, also with ``-fa`` on and off where the build allows; plus the seven
multi-device, offload and serving setups of ``benchmarks/bench_predict.py`` (``SCALE_CASES``) with the
shipped engines. Exit 1 when a number moved by more than ``--tol`` or a case answered differently.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def cases():
    """(key, callable returning predict's dict) of every case."""
    from bench_predict import SCALE_CASES

    from tokspeed.calibration.rows import load_rows
    from tokspeed.predict import predict

    for r in load_rows():
        kw = dict(quant=r.quant, prompt=r.prompt, gen=r.gen if r.kind == "decode" else 0, context=r.context,
                  batch=r.batch, engine=r.engine, engine_version=r.era or None)
        for fa in (None, True, False) if r.engine.startswith("llama.cpp") else (None,):
            yield (f"{r.id} fa={fa}", lambda r=r, kw=kw, fa=fa: predict(r.model, r.hw, flash_attention=fa,
                                                                         **kw).to_dict())
    for model, hw, engine, kw in SCALE_CASES:
        yield (f"scale {model} {hw} {engine} {kw}", lambda m=model, h=hw, e=engine, k=kw: predict(m, h, engine=e,
                                                                                               **k).to_dict())


def record() -> dict:
    out = {}
    for key, fn in cases():
        try:
            out[key] = fn()
        except Exception as e:           # noqa: BLE001  a case predict refuses must keep refusing the same way
            out[key] = {"error": f"{type(e).__name__}: {e}"}
    return out


def flat(d, prefix=""):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from flat(v, f"{prefix}{k}.")
    elif isinstance(d, list):
        for i, x in enumerate(d):
            yield from flat(x, f"{prefix}[{i}].")
    else:
        yield prefix.rstrip("."), d


def rel(a, b) -> float:
    if a == b:
        return 0.0
    if isinstance(a, bool) or isinstance(b, bool) or not all(isinstance(x, (int, float)) for x in (a, b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b))


def compare(before: dict, after: dict) -> tuple[float, str, int]:
    """(largest relative change, where, numbers compared)."""
    worst, where, n = 0.0, "", 0
    for key in before.keys() | after.keys():
        a, b = dict(flat(before.get(key, {"missing": True}))), dict(flat(after.get(key, {"missing": True})))
        for k in a.keys() | b.keys():
            n += 1
            d = rel(a.get(k), b.get(k))
            if d > worst:
                worst, where = d, f"{key}: {k} ({a.get(k)!r} -> {b.get(k)!r})"
    return worst, where, n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="JSON")
    g.add_argument("--compare", metavar="JSON")
    ap.add_argument("--tol", type=float, default=1e-9)
    args = ap.parse_args(argv)
    now = json.loads(json.dumps(record()))          # as the file holds it (tuples as lists)
    if args.record:
        Path(args.record).write_text(json.dumps(now))
        print(f"recorded {len(now)} cases in {args.record}")
        return 0
    before = json.loads(Path(args.compare).read_text())
    worst, where, n = compare(before, now)
    errors = sum(1 for v in now.values() if "error" in v)
    print(f"{len(now)} cases ({errors} refused), {n:,} values: largest relative change {worst:.3g}"
          + (f" at {where}" if where else ""))
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
