#!/usr/bin/env python3
"""Signed and absolute error per class of llama.cpp-family calibration rows (the failing classes of the hidden
tranche: Vulkan on NVIDIA / AMD / Intel, ROCm on RDNA3.5 / RDNA4, CPU, ik_llama.cpp, MoE on CUDA ...), with the
shipped fit and with the priors alone (``fitted.toml`` ignored): a kernel mechanism must improve its class under the
priors and leave the other classes as they were.

    python scripts/class_errors.py [--priors] [--build] [--json FILE] [CSV ...]

Each row is predicted at the build month it ran (``CalibrationRow.month``, ``evaluate.predicted``), as the fit sees
it, so the kernels that changed within an era (cpu_kernels.REPACK / FA_TILED_SINCE, backends.HIP_FA_MMA_SINCE) are
those it ran. ``--build``: also with the -fa its flags state (``FA``), else the build's default.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tokspeed.calibration.evaluate import error_pct, predicted_tok_s  # noqa: E402
from tokspeed.calibration.holdout import is_moe  # noqa: E402
from tokspeed.calibration.rows import load_rows  # noqa: E402
from tokspeed.engines import tables  # noqa: E402
from tokspeed.engines.profile import get_engine  # noqa: E402


def row_class(row) -> str:
    """The class of a row: backend x device family (x MoE on CUDA; ``xN``: N devices, a layer split)."""
    return _one_device_class(row) + (f" x{row.n_devices}" if row.n_devices > 1 else "")


def _one_device_class(row) -> str:
    e, vendor, arch = row.engine, (row.hw.vendor or "").lower(), str(row.hw.arch or "")
    if e == "llama.cpp-vulkan":
        return "vulkan-" + next((v for v in ("nvidia", "amd", "intel", "apple") if vendor.startswith(v)), "other")
    if e == "llama.cpp-rocm":
        return "rocm-" + (arch if arch in ("rdna3.5", "rdna4", "rdna3", "cdna3", "gcn5") else "other")
    if e == "llama.cpp-cuda":
        return "cuda-moe" if is_moe(row.model) else "cuda-dense"
    return e.removeprefix("llama.cpp-")


def priors_only() -> None:
    """Make every engine table read the priors alone (fitted.toml as if absent)."""
    real = tables.load_table

    def load(fname):
        return {} if fname == "fitted.toml" else real(fname)
    tables.load_table = load
    tables._tables.cache_clear()


def own_build_engine(row):
    """The row's engine at its build month with the -fa its flags state, else None (as ``predicted`` takes it)."""
    if not row.month or row.flash_attention is None:
        return None
    return get_engine(row.engine, row.hw, version=row.month, flash_attention=row.flash_attention)


def errors(rows, by_build: bool = False) -> dict:
    out = {}
    for row in rows:
        if row.skip not in ("", "multi-device") or not row.engine.startswith(("llama.cpp", "ik_llama")):
            continue
        try:
            out[row.id] = error_pct(predicted_tok_s(row, own_build_engine(row) if by_build else None), row.tok_s)
        except Exception:           # noqa: BLE001  -- an unanswered row is not a class error
            continue
    return out


def table(rows, errs: dict) -> str:
    cls = defaultdict(list)
    for row in rows:
        if row.id in errs:
            cls[row_class(row), row.kind].append(errs[row.id])
    lines = [f"{'class':19} {'metric':8} {'n':>4} {'signed med':>10} {'|med|':>7} {'|p90|':>7}"]
    for (c, k), xs in sorted(cls.items()):
        a = sorted(abs(x) for x in xs)
        lines.append(f"{c:19} {k:8} {len(xs):4d} {statistics.median(xs):+9.0f}% {statistics.median(a):6.0f}% "
                     f"{a[min(len(a) - 1, int(0.9 * len(a)))]:6.0f}%")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out = None
    if "--json" in args:
        i = args.index("--json")
        out = args[i + 1]
        del args[i:i + 2]
    if "--priors" in args:
        args.remove("--priors")
        priors_only()
    by_build = "--build" in args
    if by_build:
        args.remove("--build")
    rows = load_rows(args or None)
    errs = errors(rows, by_build)
    print(table(rows, errs))
    if out:
        Path(out).write_text(json.dumps(errs, indent=0, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
