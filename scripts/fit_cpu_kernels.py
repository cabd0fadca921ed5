#!/usr/bin/env python3
"""Fit the CPU engines' prompt-kernel efficiencies per kernel path on the calibration rows, and hold them out by vendor.

    python scripts/fit_cpu_kernels.py [--write] [CSV ...]

A CPU engine's prompt matmul runs on one of ``tokspeed.engines.cpu_kernels.PATHS`` (repacked int8 GEMM, AMX tiles,
llamafile tinyBLAS, per-row vec_dot, float, 16-bit float, ik_llama.cpp's iqk_mul_mat), each on its units' peak. The
share of that peak each path reaches is one number per engine and path, ``eta_compute_format[path]``: here the value
that makes the median over devices of each device's median log error zero on the path's prefill rows (a fixed-point
iteration on ``predict`` as a user calls it: each row's engine, era and device view). Medians, and one vote per
device, so that a machine measured under conditions its rows do not state cannot drag the value. A path without rows keeps its prior (priors.toml, with its measurement).

Held out by vendor: each vendor's rows predicted from the values fitted without them (the user with a CPU from a
vendor the file has no rows for). ``--write`` puts the fitted values into the engines' ``eta_compute_format`` line
of tokspeed/engines/priors.toml (deterministic: rounded to 3 significant digits).
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tokspeed.calibration.answered import why_unanswered  # noqa: E402
from tokspeed.calibration.evaluate import percentile, predicted_tok_s  # noqa: E402
from tokspeed.calibration.rows import load_rows  # noqa: E402
from tokspeed.engines.profile import get_engine, prior_profile  # noqa: E402
from tokspeed.engines.rates import cpu_gemm_path  # noqa: E402

ENGINES = ("llama.cpp-cpu", "ik_llama.cpp-cpu")
PRIORS = REPO / "tokspeed" / "engines" / "priors.toml"
ITERATIONS = 6


def prefill_rows(rows, engine):
    """The answered prefill rows of ``engine``, each with its shipped profile and kernel path."""
    out = []
    for r in rows:
        if r.engine != engine or r.kind != "prefill" or why_unanswered(r):
            continue
        prof = get_engine(r.engine, r.hw, version=r.era or None)
        out.append((r, prof, cpu_gemm_path(prof, r.hw.cpu_engine_view(), r.quant)))
    return out


def predict(items, effs):
    """(row, path, predicted tok/s) with ``effs`` as the engine's path efficiencies."""
    return [(r, path, predicted_tok_s(r, replace(p, eta_compute_format={**p.eta_compute_format, **effs})))
            for r, p, path in items]


def fit(items, prior: dict) -> dict:
    """Per path, the efficiency whose rows' median log error is 0 (paths without rows keep the prior)."""
    effs = {k: v for k, v in prior.items()}
    paths = sorted({path for _, _, path in items})
    for _ in range(ITERATIONS):
        got = predict(items, effs)
        for path in paths:
            by_device = {}
            for r, pa, pred in got:
                if pa == path and pred > 0:
                    by_device.setdefault(r.hw.name, []).append(math.log(r.tok_s / pred))
            # each device one vote (its rows' median): one machine's eight rows must not outvote two machines
            effs[path] = effs.get(path, 1.0) * math.exp(statistics.median(statistics.median(v)
                                                                          for v in by_device.values()))
    return {k: float(f"{v:.3g}") for k, v in effs.items()}


def errors(items, effs):
    return [(r, path, (pred - r.tok_s) / r.tok_s * 100) for r, path, pred in predict(items, effs)]


def stats(errs) -> str:
    a = [abs(e) for e in errs]
    return f"{len(a):3d} rows  {percentile(a, 50):5.0f} / {percentile(a, 90):5.0f} %" if a else "  0 rows"


def write(engine: str, effs: dict) -> None:
    text = PRIORS.read_text()
    head = f'["{engine}"]\n'
    a = text.index(head)
    b = text.index("\n[", a + len(head))
    body = re.sub(r"^eta_compute_format = .*$",
                  "eta_compute_format = { " + ", ".join(f"{k} = {v:g}" for k, v in sorted(effs.items())) + " }",
                  text[a:b], count=1, flags=re.M)
    PRIORS.write_text(text[:a] + body + text[b:])


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    do_write = "--write" in args
    rows = load_rows([a for a in args if a != "--write"] or None)
    for engine in ENGINES:
        items = prefill_rows(rows, engine)
        prior = dict(prior_profile(engine).eta_compute_format)
        effs = fit(items, prior)
        print(f"## {engine}: {len(items)} prefill rows")
        for path in sorted(effs):
            n = sum(1 for _, _, pa in items if pa == path)
            print(f"  {path:10s} {effs[path]:<6g} ({n} rows{'' if n else ': prior kept'}; prior {prior.get(path, '-')})")
        print(f"  in sample      {stats([e for _, _, e in errors(items, effs)])}")
        held = []
        for vendor in sorted({r.hw.vendor for r, _, _ in items}):
            rest = [it for it in items if it[0].hw.vendor != vendor]
            mine = [it for it in items if it[0].hw.vendor == vendor]
            errs = [e for _, _, e in errors(mine, fit(rest, prior))]
            held += errs
            print(f"  held out {vendor:12s} {stats(errs)}")
        print(f"  held out by vendor, all {stats(held)}")
        if do_write and items:
            write(engine, effs)
            print(f"  wrote {PRIORS.relative_to(REPO)} [{engine}] eta_compute_format")
    return 0


if __name__ == "__main__":
    sys.exit(main())
