#!/usr/bin/env python3
"""Fit the CPU engines' kernel efficiencies per kernel path on the calibration rows, and hold them out by vendor.

    python scripts/fit_cpu_kernels.py [--write] [CSV ...]

A CPU engine's prompt matmul runs on one of ``tokspeed.engines.cpu_kernels.PATHS`` (repacked int8 GEMM, AMX tiles,
llamafile tinyBLAS, per-row vec_dot, float, 16-bit float, ik_llama.cpp's iqk_mul_mat), each on its units' peak. The
share of that peak each path reaches is one number per engine and path, ``eta_compute_format[path]``: here the value
that makes the median over devices of each device's median log error zero on the path's prefill rows (a fixed-point
iteration on ``predict`` as a user calls it: each row's engine, era and device view). Medians, and one vote per
device, so that a machine measured under conditions its rows do not state cannot drag the value. Each starts from
its measured value (``MEASURED``); a path without rows keeps it.

Decode rows (``int8_matvec`` by ``cpu_kernels.matvec_key``: the repacked gemv, ik_llama.cpp's, a format group's
vec_dot) vote only where 10 % less int8 rate moves their prediction: a memory-bound row says nothing of the kernels.

Held out by vendor: each vendor's rows predicted from the values fitted without them (the user with a CPU from a
vendor the file has no rows for). A key whose rows' held-out median error is no better than under its measured
value keeps the measured value: a fit that does not transfer across vendors is not written.

``--write`` puts the values into the engines' ``eta_compute_format`` and ``int8_matvec`` lines of
tokspeed/engines/priors.toml (deterministic: 3 significant digits), and each engine's ``decode_error_pct`` /
``prefill_error_pct``: the p90 band error (``stats.band_error_pct``) of all its answered rows of the metric (the
fitted ones held out by vendor), never below the prior's band.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tokspeed.calibration.answered import why_unanswered  # noqa: E402
from tokspeed.calibration.evaluate import predicted_tok_s
from tokspeed.stats import band_error_pct, percentile
from tokspeed.calibration.rows import load_rows  # noqa: E402
from tokspeed.engines.profile import get_engine  # noqa: E402
from tokspeed.engines.cpu_kernels import matvec_key  # noqa: E402
from tokspeed.engines.rates import cpu_gemm_path, int8_matvec_flops  # noqa: E402

ENGINES = ("llama.cpp-cpu", "ik_llama.cpp-cpu")
PRIORS = REPO / "tokspeed" / "engines" / "priors.toml"
ITERATIONS = 6


@dataclass(frozen=True)
class Part:
    """What is fitted: the prompt kernels (prefill rows, ``eta_compute_format`` by path) or one token's
    (decode rows, ``int8_matvec`` by ``cpu_kernels.matvec_key``)."""
    kind: str
    field: str


PARTS = (Part("prefill", "eta_compute_format"), Part("decode", "int8_matvec"))

# Where each value starts, and what stays where the rows cannot improve on it held out: the measured values
# (benchmarks/RESULTS-cpu-prefill.md, priors.toml [CPUPP] [CPUMV]: llama-cpp-python 0.3.36 on a 2-core AVX2 Zen 3,
# as fractions of the path's unit -- x86 repack = 2 x FP32, llamafile / vec_dot = FP32 at 256 bits) and the
# ASSUMED ones for paths nothing measured. Prefill: F32 0.725 .. F16 1.00 -> float 0.85; Q8_0 (tinyBLAS) 0.73;
# Q4_0 (q4_0_8x8) 0.835 / 2; Q4_K_M (q4_K_8x8 in that build) 0.74 / 2 -- its vec_dot ASSUMED 0.74 of FP32; float16
# ASSUMED half of float's (its 2 x unit, the same conversion and FMA work); iqk ASSUMED as mainline's repack; amx
# has no value (not measured: ggml's AMX code faults on this project's VM), so no engine takes that path. Decode: Q4_0 0.26 / 2, Q4_K_M 0.22 / 2,
# Q8_0 0.145 / 2 (streaming, median of runs), the repacked gemv as Q4_0's, ik's as mainline's.
MEASURED = {
    "eta_compute_format": {"float": 0.85, "llamafile": 0.73, "repack": 0.42, "vec_dot": 0.74, "float16": 0.42,
                           "iqk": 0.42},
    "int8_matvec": {"legacy": 0.13, "kquant": 0.11, "q8": 0.07, "mxfp4": 0.11, "repack": 0.13, "iqk": 0.13},
}
OWN = {"llama.cpp-cpu": ("float", "llamafile", "repack", "vec_dot", "float16", "legacy", "kquant", "q8", "mxfp4"),
       "ik_llama.cpp-cpu": ("float", "float16", "iqk", "legacy", "kquant", "q8", "mxfp4")}


def measured(engine: str, field: str) -> dict:
    """The measured (or stated ASSUMED) values of ``field`` for the keys ``engine``'s kernels have."""
    return {k: v for k, v in MEASURED[field].items() if k in OWN[engine]}
SENSITIVE = 0.03      # a decode row votes if 10 % less int8 rate moves its prediction by more than this


def key_of(part: Part, prof, r) -> str:
    hw = r.hw.cpu_engine_view()
    if part.field == "eta_compute_format":
        return cpu_gemm_path(prof, hw, r.quant)
    return matvec_key(prof, hw, r.quant, prof.build_month) if int8_matvec_flops(prof, hw, r.quant) else ""


def with_effs(prof, part: Part, effs: dict):
    return replace(prof, **{part.field: {**getattr(prof, part.field), **effs}})


def part_rows(rows, engine, part: Part):
    """The answered rows of ``engine`` the part is fitted on, each with its shipped profile and key: prefill rows;
    decode rows on int8 kernels whose prediction moves with their rate (a memory-bound row cannot say it)."""
    out = []
    for r in rows:
        if r.engine != engine or r.kind != part.kind or why_unanswered(r):
            continue
        prof = get_engine(r.engine, r.hw, version=r.era or None)
        key = key_of(part, prof, r)
        if not key:
            continue
        if part.kind == "decode":
            slower = with_effs(prof, part, {key: getattr(prof, part.field)[key] * 0.9})
            if predicted_tok_s(r, slower) > predicted_tok_s(r, prof) * (1 - SENSITIVE):
                continue
        out.append((r, prof, key))
    return out


def predict(items, part: Part, effs):
    """(row, key, predicted tok/s) with ``effs`` as the engine's values of the part's field."""
    return [(r, key, predicted_tok_s(r, with_effs(p, part, effs))) for r, p, key in items]


def fit(items, part: Part, prior: dict) -> dict:
    """Per key, the value whose rows' median (over devices) log error is 0 (keys without rows keep the prior)."""
    effs = {k: v for k, v in prior.items()}
    paths = sorted({path for _, _, path in items})
    for _ in range(ITERATIONS):
        got = predict(items, part, effs)
        for path in paths:
            by_device = {}
            for r, pa, pred in got:
                if pa == path and pred > 0:
                    by_device.setdefault(r.hw.name, []).append(math.log(r.tok_s / pred))
            # each device one vote (its rows' median): one machine's eight rows must not outvote two machines
            effs[path] = effs.get(path, 1.0) * math.exp(statistics.median(statistics.median(v)
                                                                          for v in by_device.values()))
    return {k: float(f"{v:.3g}") for k, v in effs.items()}


def errors(items, part, effs):
    return [(r, path, (pred - r.tok_s) / r.tok_s * 100) for r, path, pred in predict(items, part, effs)]


def stats(errs) -> str:
    a = [abs(e) for e in errs]
    return f"{len(a):3d} rows  {percentile(a, 50):5.0f} / {percentile(a, 90):5.0f} %" if a else "  0 rows"


def write(engine: str, field: str, effs: dict) -> None:
    text = PRIORS.read_text()
    head = f'["{engine}"]\n'
    a = text.index(head)
    b = text.index("\n[", a + len(head))
    body = re.sub(rf"^{field} = .*$",
                  f"{field} = {{ " + ", ".join(f"{k} = {v:g}" for k, v in sorted(effs.items())) + " }",
                  text[a:b], count=1, flags=re.M)
    PRIORS.write_text(text[:a] + body + text[b:])


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    do_write = "--write" in args
    rows = load_rows([a for a in args if a != "--write"] or None)
    for engine in ENGINES:
        written, held_by_id = {}, {}
        for part in PARTS:
            items = part_rows(rows, engine, part)
            prior = measured(engine, part.field)
            effs = fit(items, part, prior)
            print(f"## {engine} {part.kind} ({part.field}): {len(items)} rows")
            for key in sorted(effs):
                n = sum(1 for _, _, k in items if k == key)
                print(f"  {key:10s} {effs[key]:<6g} ({n} rows{'' if n else ': prior kept'}; prior {prior.get(key, '-')})")
            print(f"  measured       {stats([e for _, _, e in errors(items, part, prior)])}")
            held = []
            for vendor in sorted({r.hw.vendor for r, _, _ in items}):
                rest = [it for it in items if it[0].hw.vendor != vendor]
                mine = [it for it in items if it[0].hw.vendor == vendor]
                errs = errors(mine, part, fit(rest, part, prior))
                held += errs
                print(f"  held out {vendor:12s} {stats([e for _, _, e in errs])}")
            print(f"  held out by vendor, all {stats([e for _, _, e in held])}")
            base = errors(items, part, prior)
            for key in sorted({k for _, _, k in items}):      # each key: the fit only where it transfers
                mine = lambda errs: percentile([abs(e) for _, k, e in errs if k == key], 50)  # noqa: E731
                if mine(held) >= mine(base):
                    print(f"  {key}: held out {mine(held):.0f} % is no better than the measured value's "
                          f"{mine(base):.0f} %: it stays")
                    effs[key] = prior[key]
            print(f"  as written     {stats([e for _, _, e in errors(items, part, effs)])}")
            written[part.field] = effs
            held_by_id.update({r.id: e for r, _, e in held})
            if do_write:
                write(engine, part.field, effs)
                print(f"  wrote {PRIORS.relative_to(REPO)} [{engine}] {part.field}")
        for kind, pct in bands(rows, engine, written, held_by_id).items():
            print(f"## {engine} {kind} band: {pct:g} % (p90 of every answered row, the fitted ones held out by vendor; "
                  f"at least the prior's {BAND_PRIOR[engine][kind]:g})")
            if do_write:
                write_scalar(engine, f"{kind}_error_pct", pct)
    return 0


# The error band each engine had before any row (priors.toml): the floor of the band written from the rows.
BAND_PRIOR = {"llama.cpp-cpu": {"decode": 50, "prefill": 60}, "ik_llama.cpp-cpu": {"decode": 60, "prefill": 80}}
BAND_STEP = 5


def bands(rows, engine: str, written: dict, held_by_id: dict) -> dict:
    """{decode|prefill: band %}: the p90 band error (``stats.band_error_pct``: max(predicted / measured, measured /
    predicted) - 1) of the engine's answered rows of that metric under the written values -- a row a part was fitted
    on counts with its held-out (by vendor) error --, rounded up to BAND_STEP and never below the prior's band."""
    out = {}
    for kind in ("decode", "prefill"):
        errs = []
        for r in rows:
            if r.engine != engine or r.kind != kind or why_unanswered(r):
                continue
            if r.id in held_by_id:
                errs.append(band_error_pct(held_by_id[r.id]))
                continue
            prof = get_engine(r.engine, r.hw, version=r.era or None)
            prof = replace(prof, **{f: {**getattr(prof, f), **v} for f, v in written.items()})
            errs.append(band_error_pct((predicted_tok_s(r, prof) / r.tok_s - 1) * 100))
        if errs:
            p90 = math.ceil(percentile(errs, 90) / BAND_STEP) * BAND_STEP
            out[kind] = float(max(BAND_PRIOR[engine][kind], p90))
    return out


def write_scalar(engine: str, field: str, value: float) -> None:
    text = PRIORS.read_text()
    a = text.index(f'["{engine}"]\n')
    b = text.index("\n[", a + 1)
    body = re.sub(rf"^{field} = .*$", f"{field} = {value:g}", text[a:b], count=1, flags=re.M)
    PRIORS.write_text(text[:a] + body + text[b:])


if __name__ == "__main__":
    sys.exit(main())
