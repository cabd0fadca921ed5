"""`tokspeed fit` speed: the whole catalog on one device, measured side by side in one run.

Prints, for each device, the wall time of
  1. ``rank_models`` in a fresh interpreter (cold: catalog TOMLs parsed, every tensor size computed once);
  2. ``rank_models`` again in the same process on another device (warm: what the web page pays);
  3. the naive search it replaces, in the same process: ``predict`` for every catalog model in each
     llama.cpp format, highest precision first, until one fits (the script checks that both pick the
     same format per model);
with the ratios, and rewrites benchmarks/RESULTS_fit.md. Not a test (timings depend on the machine).

    python benchmarks/bench_fit.py            # ~1-2 min on 2 busy cores
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "RESULTS_fit.md"
DEVICES = ["rtx-4090", "m4-max-40", "h100-sxm"]
REPEATS = 3

COLD = """
import time, sys
t = time.perf_counter()
from tokspeed.advise.runs_here import rank_models
rows = rank_models(sys.argv[1])
print(time.perf_counter() - t, len(rows))
"""


def cold(device: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", COLD, device], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.split()
    return float(out[0]), int(out[1])


def naive(device: str) -> tuple[float, dict]:
    """predict() for every model x every format; the best = highest precision that fits."""
    from tokspeed import predict
    from tokspeed.models.catalog import model_ids
    from tokspeed.quant.format_table import fit_formats

    GGUF_FORMATS = fit_formats("llama.cpp")

    t = time.perf_counter()
    best = {}
    for mid in model_ids():
        for q in GGUF_FORMATS:
            if predict(mid, device, quant=q, context=8192, prompt=512, gen=1).memory.fits:
                best[mid] = q
                break
    return time.perf_counter() - t, best


def main() -> int:
    from tokspeed.advise.runs_here import rank_models

    lines = []
    for device in DEVICES:
        colds = [cold(device) for _ in range(REPEATS)]
        n = colds[0][1]
        t_cold = statistics.median(c[0] for c in colds)
        rank_models("h100-sxm" if device != "h100-sxm" else "rtx-4090", allow_low_bits=True)   # warm caches elsewhere
        warm = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            # every format and window (the naive loop's candidates); released-below-16-bit models compared apart
            rows = rank_models(device, allow_low_bits=True, rope_scaling=True)
            warm.append(time.perf_counter() - t)
        t_warm = statistics.median(warm)
        t_naive, best = naive(device)
        from tokspeed.models.catalog import get_model

        plain = [r for r in rows if not get_model(r.model).released_format]   # MXFP4/FP8 releases: not in the loop
        same = all(best.get(r.model, GGUF_FORMATS_LAST) == r.quant for r in plain if r.fits) and \
            all(r.model not in best for r in plain if not r.fits)
        line = (f"| {device} | {n} | {t_cold:.3f} | {t_warm:.3f} | {t_naive:.2f} | {t_naive / t_warm:.1f}x | "
                f"{'yes' if same else 'NO'} |")
        print(line, flush=True)
        lines.append(line)
    head = ["| device | models | rank_models cold (s) | warm, same process (s) | naive predict x formats (s) "
            "| naive / warm (both in-process) | same choices |", "|---|---|---|---|---|---|---|"]
    stamp = (f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()} {os.cpu_count()} CPUs "
             f"(load average {os.getloadavg()[0]:.1f}), "
             f"Python {platform.python_version()}; median of {REPEATS} runs (cold: fresh interpreter, imports and "
             f"catalog parsing included)")
    RESULTS.write_text("# `tokspeed fit` timing (benchmarks/bench_fit.py)\n\n"
                       "Whole catalog, one device, llama.cpp formats, context 8192 + prompt 512. The naive column "
                       "predicts each model in each format, highest precision first, until one fits (in the same "
                       "process as the warm column); `rank_models` starts from a size guess, checks predict's "
                       "memory arithmetic alone and predicts once per model (see tokspeed/advise/runs_here.py). "
                       "The machine is a shared 2-core box: see the load average in the stamp.\n\n"
                       + stamp + "\n\n" + "\n".join(head + lines) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


GGUF_FORMATS_LAST = None

if __name__ == "__main__":
    sys.exit(main())
