"""`tokspeed measure --from FILE`: a llama-bench run (its JSON, JSONL, CSV, markdown or SQL output) beside the
predictions for the same tests, and with ``--calibrate`` this machine's llama.cpp calibration fitted on its decode
tests and stored in the hardware profile (``tokspeed.measure.bench_compare``)."""

from __future__ import annotations

from ..errors import UserError
from ..guard.escape import markup
from ..measure.bench_compare import calibrate_from, compare
from ..measure.llama_bench import read_bench
from ..measure.runner import resolve_hardware
from .options import print_json


def run_from(args, err, out) -> int:
    rows = read_bench(args.from_file)
    hw, profile_path = None, None
    hardware = args.hardware if args.hardware != "local" or args.calibrate else ""
    if hardware:
        hw, profile_path = resolve_hardware(hardware)
    compared, skipped = compare(rows, args.model, hw)
    cal = None
    if args.calibrate:
        cal = calibrate_from(compared, hw, profile_path)
        compared, skipped = compare(rows, args.model, resolve_hardware(hardware)[0])   # read back: calibrated
        err.print(f"calibration stored in {markup(profile_path)}: eta_memory {cal.eta_memory:.3f}, overhead "
                  f"{cal.overhead_s * 1e3:.2f} ms/token (fit rms error {cal.rms_rel_error:.1%} over {cal.n_points} "
                  "decode tests); later llama.cpp predictions on this profile use it")
    for line in skipped:
        err.print(f"[yellow]not predicted:[/] {markup(line)}")
    if args.json:
        print_json({"file": str(args.from_file), "tests": [_as_dict(c) for c in compared], "not_predicted": skipped,
                    "calibration": cal.to_dict() if cal else None}, ensure_ascii=False)
        return 0
    _table(compared, out)
    return 0


def _as_dict(c) -> dict:
    r = c.row
    return {"test": r.test, "metric": r.metric, "model": c.model, "quant": c.quant, "engine": c.engine,
            "device": c.device, "measured_tok_s": r.avg_ts, "stddev_tok_s": r.stddev_ts,
            "predicted_tok_s": c.predicted_tok_s, "error_pct": c.error_pct, "build": r.build, "source": c.source}


def _table(compared, console) -> None:
    from ..report.text import FitTable

    t = FitTable(title="llama-bench measured beside predicted (tok/s)")
    for col, numeric, drop in (("test", True, 0), ("model", False, 0), ("quant", False, 2), ("backend", False, 3),
                               ("measured", True, 0), ("predicted", True, 0), ("error", True, 0)):
        t.column(col, numeric=numeric, drop=drop)
    for c in compared:
        t.row(c.row.test, c.model, c.quant, c.engine.replace("llama.cpp-", ""),
              f"{c.row.avg_ts:,.2f} ± {c.row.stddev_ts:,.2f}", f"{c.predicted_tok_s:,.2f}", f"{c.error_pct:+.0f} %")
    t.print(console)
    devices = sorted({c.device for c in compared})
    console.print(f"on {', '.join(devices)}; predicted by {compared[0].source.split(';')[0]}", markup=False)


def check(args) -> None:
    if args.text is not None or args.output or args.plot:
        raise UserError("--from compares a llama-bench file: --text, --output and --plot do not apply",
                        "drop them")
