#!/usr/bin/env python3
"""Error of tokspeed's scale model on the multi-GPU (n_devices > 1) and batched (batch > 1) rows of
data/validation/calibration.csv (the repository's copy): median and p90 absolute % error, overall and per group.

    python scripts/eval_scale_calibration.py [--csv PATH] [--rows] [--json]

Each row is predicted with the row's engine, quant, prompt/gen/context and batch, ``--gpus n_devices``
and ``--parallel`` from its ``parallel`` column (``layer-split`` -> split, ``tp`` -> tp; llama.cpp's
pre-2024 row split is tp with a sync per matmul). ``decode`` rows compare decode.tok_s (per sequence),
``decode_aggregate`` rows decode.aggregate_tok_s, ``prefill`` rows prefill.tok_s. Rows whose model or
device is not in the catalogs, and DUPLICATE_OF rows, are skipped and counted.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_CSV = ROOT / "data" / "validation" / "calibration.csv"
QUANTS = {"INT8 (weight-only)": "INT8"}
PARALLEL = {"layer-split": "split", "tp": "tp", "none": None}


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def is_scale(r) -> bool:
    return int(r["n_devices"] or 1) > 1 or int(r["batch"] or 1) > 1


def base_key(r):
    """What a multi-GPU / batched row shares with its one-device, one-sequence counterpart."""
    metric = "decode" if r["metric"] == "decode_aggregate" else r["metric"]
    return (r["source"], r["hardware"], r["model"], r["quant"], r["engine"], metric, r["prompt_tokens"],
            r["gen_tokens"], r["context_depth"])


def counterparts(rows):
    """One-device batch-1 rows by base key: the measured speed a scale row is a speed-up over."""
    return {base_key(r): r for r in rows if not is_scale(r) and "DUPLICATE_OF" not in r["flags"]}


def predict_row(r, single: bool = False):
    """Predicted tok/s for the row (``single``: for the same run on one device, batch 1)."""
    from tokspeed.predict import predict

    n = 1 if single else int(r["n_devices"] or 1)
    metric = r["metric"]
    prompt = int(r["prompt_tokens"]) if r["prompt_tokens"] else (512 if metric == "prefill" else 0)
    gen = int(r["gen_tokens"]) if r["gen_tokens"] else (0 if metric == "prefill" else 128)
    p = predict(r["model"], r["hardware"], quant=QUANTS.get(r["quant"], r["quant"]), engine=r["engine"],
                prompt=prompt, gen=max(gen, 1) if metric != "prefill" else 1, context=int(r["context_depth"] or 0),
                batch=1 if single else int(r["batch"] or 1), gpus=n, parallel=PARALLEL.get(r["parallel"]) if n > 1 else None)
    link = (p.layout.link.kind if p.layout is not None and p.layout.link is not None else None)
    if metric == "prefill":
        return p.prefill.tok_s, link
    if metric == "decode_aggregate" and not single:
        return p.decode.aggregate_tok_s, link
    return p.decode.tok_s, link


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summarize(errs):
    a = [abs(e) for e in errs]
    return {"n": len(a), "median_abs_pct": statistics.median(a) if a else float("nan"),
            "p90_abs_pct": percentile(a, 0.9), "median_signed_pct": statistics.median(errs) if errs else float("nan")}


def evaluate(path, keep=None):
    from tokspeed.errors import UserError

    results, skipped = [], defaultdict(int)
    rows = read_rows(path)
    base = counterparts(rows)
    for r in rows:
        if not is_scale(r) or (keep is not None and not keep(r)):
            continue
        if "DUPLICATE_OF" in r["flags"]:
            skipped["duplicate"] += 1
            continue
        try:
            pred, link_kind = predict_row(r)
        except UserError as e:
            skipped[str(e).split(" (")[0][:70]] += 1
            continue
        if not pred:
            skipped["no prediction (no FLOP/s figure)"] += 1
            continue
        meas = float(r["tok_s"])
        speedup_err = None
        b = base.get(base_key(r))
        if b is not None:
            try:
                pred_single = predict_row(r, single=True)[0]
            except UserError:
                pred_single = None
            if pred_single:
                speedup_err = ((pred / pred_single) / (meas / float(b["tok_s"])) - 1) * 100
        results.append({"speedup_error_pct": speedup_err, "link_kind": link_kind, "id": r["id"], "hardware": r["hardware"], "n": int(r["n_devices"] or 1), "parallel": r["parallel"],
                        "model": r["model"], "quant": r["quant"], "engine": r["engine"], "metric": r["metric"],
                        "batch": int(r["batch"] or 1), "measured": meas, "predicted": pred,
                        "error_pct": (pred - meas) / meas * 100})
    groups, sgroups = defaultdict(list), defaultdict(list)
    for x in results:
        kind = "batched" if x["batch"] > 1 else f"{x['parallel']}"
        name = f"{kind} {x['engine']} {x['metric']}"
        groups[name].append(x["error_pct"])
        if x["speedup_error_pct"] is not None:
            sgroups[name].append(x["speedup_error_pct"])
    multi = [x for x in results if x["n"] > 1]
    batched = [x for x in results if x["batch"] > 1]

    def sp(xs):
        return summarize([x["speedup_error_pct"] for x in xs if x["speedup_error_pct"] is not None])

    from tokspeed.scale.parallel import row_split_prefill

    modelled = [x for x in results if not row_split_prefill(x["engine"], x["parallel"], x["n"], x["metric"])]
    return {"all": summarize([x["error_pct"] for x in results]), "multi_gpu": summarize([x["error_pct"] for x in multi]),
            "modelled": summarize([x["error_pct"] for x in modelled]),
            "batched": summarize([x["error_pct"] for x in batched]),
            "speedup": {"all": sp(results), "multi_gpu": sp(multi), "batched": sp(batched), "modelled": sp(modelled)},
            "groups": {k: summarize(v) for k, v in sorted(groups.items())},
            "speedup_groups": {k: summarize(v) for k, v in sorted(sgroups.items())},
            "skipped": dict(skipped), "rows": results}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=str(DEFAULT_CSV))
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--fit", action="store_true", help="grid-fit the per-sync latency of each link kind")
    args = ap.parse_args(argv)
    if args.fit:
        print("best:", {k: f"{v * 1e6:g} us" for k, v in fit_latency(args.csv).items()})
        return 0
    res = evaluate(args.csv)
    if args.json:
        json.dump(res, sys.stdout, indent=1)
        return 0
    if args.rows:
        for x in res["rows"]:
            spe = x["speedup_error_pct"]
            print(f"{'' if spe is None else f'{spe:+7.1f}% sp'} {x['id']} {x['hardware'][:28]:28} x{x['n']} {x['parallel']:11} {x['model']:14} {x['quant']:8} "
                  f"{x['engine']:15} {x['metric']:16} b{x['batch']:<3} meas {x['measured']:9.2f} "
                  f"pred {x['predicted']:9.2f} {x['error_pct']:+7.1f}%")
    print(f"{'group':45} {'n':>4} {'median |%|':>11} {'p90 |%|':>9} {'median %':>9}")
    for name in ("all", "multi_gpu", "batched", "modelled"):
        s = res[name]
        print(f"{name:45} {s['n']:4} {s['median_abs_pct']:11.1f} {s['p90_abs_pct']:9.1f} {s['median_signed_pct']:+9.1f}")
    for name, s in res["groups"].items():
        print(f"  {name:43} {s['n']:4} {s['median_abs_pct']:11.1f} {s['p90_abs_pct']:9.1f} {s['median_signed_pct']:+9.1f}")
    print("\nspeed-up over the same source's one-device, batch-1 row (isolates the scale model from the engine model):")
    print(f"{'group':45} {'n':>4} {'median |%|':>11} {'p90 |%|':>9} {'median %':>9}")
    for name in ("all", "multi_gpu", "batched", "modelled"):
        s = res["speedup"][name]
        print(f"{name:45} {s['n']:4} {s['median_abs_pct']:11.1f} {s['p90_abs_pct']:9.1f} {s['median_signed_pct']:+9.1f}")
    for name, s in res["speedup_groups"].items():
        print(f"  {name:43} {s['n']:4} {s['median_abs_pct']:11.1f} {s['p90_abs_pct']:9.1f} {s['median_signed_pct']:+9.1f}")
    print("modelled = all but llama.cpp row-split prefill (2023 builds; see docs/scale.md)")
    if res["skipped"]:
        print("skipped: " + "; ".join(f"{k}: {v}" for k, v in res["skipped"].items()))
    return 0



def fit_latency(path, grid_us=(5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 80, 100)):
    """Per-operation sync latency minimising the median |speed-up error| of the tensor-parallel decode
    rows that use it: llama.cpp's row split (peer copies) and gpt-fast (NCCL all-reduce)."""
    from tokspeed.scale import interconnect

    groups = {"peer-copy": lambda r: r["engine"].startswith("llama.cpp"),
              "all-reduce": lambda r: not r["engine"].startswith("llama.cpp")}
    saved = dict(interconnect.SYNC_LATENCY_S)
    best = {}
    try:
        for kind, which in groups.items():
            keep = lambda r, w=which: r["parallel"] == "tp" and r["metric"] == "decode" and w(r)  # noqa: E731
            scores = []
            for us in grid_us:
                interconnect.SYNC_LATENCY_S[kind] = us * 1e-6
                errs = [x["speedup_error_pct"] for x in evaluate(path, keep)["rows"]
                        if x["speedup_error_pct"] is not None]
                if errs:
                    med = statistics.median(abs(e) for e in errs)
                    scores.append((med, us))
                    print(f"{kind:10} {us:4} us: n={len(errs)} median |speed-up error| {med:5.1f}%  "
                          f"median signed {statistics.median(errs):+6.1f}%")
            interconnect.SYNC_LATENCY_S[kind] = saved[kind]
            if scores:
                best[kind] = min(scores)[1] * 1e-6
    finally:
        interconnect.SYNC_LATENCY_S.update(saved)
    return best

if __name__ == "__main__":
    raise SystemExit(main())
