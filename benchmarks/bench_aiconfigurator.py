#!/usr/bin/env python3
"""tokspeed and AIConfigurator (NVIDIA's serving predictor, 0.12.0) answering the same questions, side by side.

    PYTHONPATH=. python3 benchmarks/bench_aiconfigurator.py [--refresh] [--no-write] [--out FILE]

AIConfigurator is never a tokspeed dependency: it lives in its own venv and runs in a subprocess
(``aiconfigurator_driver.py`` under its interpreter: ``$AICONFIGURATOR_PYTHON``, else /tmp/aic-venv/bin/python).
Without it the script prints how to install it and exits 0. Its answers are cached in the results file
(``benchmarks/RESULTS_aiconfigurator.md``, the JSON block at its end), keyed by question; ``--refresh`` asks again.

a. every row of data/validation/serving-calibration.csv that both tools can answer (``tokspeed.serving.rows``
   cases on a device, model and engine AIConfigurator has data for): output tok/s per GPU, TPOT p50 and TTFT p50
   against the measured value, per row, and the median / p90 of |predicted / measured - 1| of each tool on the
   same rows (``aiconfigurator_rows.py`` maps a row to AIConfigurator's inputs);
b. issue 28's questions through ``tokspeed serve --json`` and AIConfigurator's ``cli default`` search or its
   max-throughput point; c. single-stream and static-batch TPOT/TTFT; each tool's wall time
   (``aiconfigurator_report.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().parent / "aiconfigurator_driver.py"
RESULTS = ROOT / "benchmarks" / "RESULTS_aiconfigurator.md"
DEFAULT_PYTHON = "/tmp/aic-venv/bin/python"
CACHE_HEAD = "## AIConfigurator's answers (cache)"
INSTALL = """AIConfigurator was not found ({why}); nothing to compare, exiting.
It is never a tokspeed dependency: install it in its own venv and point this script at that interpreter:
    python3 -m venv /tmp/aic-venv && /tmp/aic-venv/bin/pip install aiconfigurator==0.12.0
    AICONFIGURATOR_PYTHON=/tmp/aic-venv/bin/python PYTHONPATH=. python3 benchmarks/bench_aiconfigurator.py"""


def find_aiconfigurator() -> tuple[str | None, str]:
    """(interpreter, "") where AIConfigurator imports, else (None, why not)."""
    py = os.environ.get("AICONFIGURATOR_PYTHON") or DEFAULT_PYTHON
    if not Path(py).is_file():
        return None, f"no interpreter at {py}"
    try:
        r = subprocess.run([py, "-c", "import aiconfigurator.cli.api"], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{py} does not run: {e}"
    if r.returncode != 0:
        return None, f"{py} cannot import aiconfigurator"
    return py, ""


# ---------------------------------------------------------------- AIConfigurator's answers, cached

def _key(q: dict) -> str:
    return json.dumps(q, sort_keys=True, separators=(",", ":"))


def load_cache(path: Path) -> dict:
    """{question key: answer} from the JSON block under CACHE_HEAD of a results file."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    at = text.find(CACHE_HEAD)
    if at < 0:
        return {}
    block = text[at:].split("```json", 1)[-1].split("```", 1)[0]
    try:
        return {_key(q): a for q, a in (json.loads(line) for line in block.splitlines() if line.strip())}
    except (ValueError, TypeError):
        return {}


def _rounded(v):
    """Floats to 3 decimals (ms, tok/s: far below what the tools resolve) to keep the results file small."""
    if isinstance(v, float):
        return round(v, 3)
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    return v


def cache_text(cache: dict) -> str:
    lines = "\n".join(json.dumps([json.loads(k), _rounded(cache[k])], separators=(",", ":")) for k in sorted(cache))
    return (f"{CACHE_HEAD}\n\nOne line per question: [question, answer] (read back by the script; `--refresh` asks "
            f"again).\n\n```json\n{lines}\n```\n")


class Aic:
    """Asks the driver (one subprocess per batch of new questions) what the cache does not hold."""

    def __init__(self, python: str, cache: dict):
        self.python, self.cache, self.asked, self.wall_s, self.used = python, cache, 0, 0.0, {}

    def ask(self, questions: list[dict]) -> list[dict]:
        todo = [q for q in {_key(q): q for q in questions}.values() if _key(q) not in self.cache]
        if todo:
            t = time.perf_counter()
            env = {**os.environ, "AICONFIGURATOR_LOG_LEVEL": "ERROR", "PYTHONWARNINGS": "ignore"}
            env.pop("PYTHONPATH", None)
            r = subprocess.run([self.python, str(DRIVER)], input=json.dumps(todo), capture_output=True, text=True,
                               env=env, timeout=3000)
            if r.returncode != 0:
                raise RuntimeError(f"AIConfigurator driver failed: {r.stderr.strip()[-500:]}")
            for q, a in zip(todo, json.loads(r.stdout)):
                self.cache[_key(q)] = a
            self.asked += len(todo)
            self.wall_s += time.perf_counter() - t
        self.used.update({_key(q): self.cache[_key(q)] for q in questions})
        return [self.cache[_key(q)] for q in questions]


def tokspeed_serve(argv: list[str]) -> tuple[dict, float]:
    """``tokspeed serve ... --json`` run in this process: (its document, wall seconds)."""
    from tokspeed.cli.main import main

    out = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(out):
        rc = main(["serve", *argv, "--json"])
    if rc:
        raise RuntimeError(f"tokspeed serve {' '.join(argv)} exited {rc}")
    return json.loads(out.getvalue()), time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refresh", action="store_true", help="ask AIConfigurator again (ignore the cached answers)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--out", default=str(RESULTS), help="results file (default benchmarks/RESULTS_aiconfigurator.md)")
    a = ap.parse_args()
    python, why = find_aiconfigurator()
    if python is None:
        print(INSTALL.format(why=why))
        return 0
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from aiconfigurator_report import report          # noqa: PLC0415  tokspeed is imported only from here on

    out = Path(a.out)
    aic = Aic(python, {} if a.refresh else {**load_cache(RESULTS), **load_cache(out)})
    try:
        text = report(aic, tokspeed_serve)
    except BaseException:
        if not a.no_write:       # keep what AIConfigurator answered so far for the next run
            out.write_text("# Incomplete run (the report failed)\n\n" + cache_text(aic.cache), encoding="utf-8")
        raise
    print(text.split("\n## Every row", 1)[0])        # the per-row table is in the file only
    print(f"AIConfigurator: {aic.asked} questions asked ({aic.wall_s:.0f} s), {len(aic.used) - aic.asked} from the "
          "cache", file=sys.stderr)
    if not a.no_write:
        out.write_text(text + "\n" + cache_text(aic.used), encoding="utf-8")     # the answers this run used
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
