#!/usr/bin/env python3
"""Record a real llama-bench run on this machine in every format llama-bench writes, for `measure --from`'s tests.

    python scripts/record_llama_bench_here.py [--out tests/data/llama_bench]

Writes a GGUF at SmolLM2-135M's shape (tests/files_fixtures.py: 30 layers, d_model 576, 9 heads / 3 KV heads,
Q8_0 weights, zero-valued: timing does not depend on the values) into a temporary folder, runs the llama-bench that
scripts/build_llama_server.sh built (or $TOKSPEED_LLAMA_BENCH) once per output format (-o json, jsonl, csv, md,
sql: pp512, tg64 at depths 0 and 512, 2 threads, 3 repetitions), and writes each output as
``here-cpu-smollm2-135m.<format>`` (and two more runs: ``.threads.md``, a -t 1,2 sweep with -fa and -ub set;
``.pg.json``, a pp128+tg16 test) and this machine's probed profile as ``here-cpu.toml`` (``tokspeed probe
--device cpu``). The model file is named on llama-bench's command line without a folder, so the outputs name only
``SmolLM2-135M-Q8_0.gguf``. Each format is its own run: the speeds differ from file to file as runs do.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from files_fixtures import SMOLLM2_135M, write_loadable_llama  # noqa: E402
from progress import llama_cpp_binary  # noqa: E402

FORMATS = ("json", "jsonl", "csv", "md", "sql")
MODEL = "SmolLM2-135M-Q8_0.gguf"
ARGS = ["-p", "512", "-n", "64", "-d", "0,512", "-t", "2", "-r", "3"]
# two more runs: a thread sweep with -ub and -fa set (the markdown table then prints those columns), a pp+tg test
EXTRA = {"threads.md": ["-p", "64", "-n", "4", "-fa", "1", "-ub", "128", "-t", "1,2", "-r", "1", "-o", "md"],
         "pg.json": ["-p", "0", "-n", "0", "-pg", "128,16", "-t", "2", "-r", "1", "-o", "json"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "llama_bench"))
    args = ap.parse_args(argv)
    bench = llama_cpp_binary("llama-bench")
    if bench is None:
        print("no llama-bench: bash scripts/build_llama_server.sh (or set TOKSPEED_LLAMA_BENCH)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        write_loadable_llama(Path(tmp) / MODEL, SMOLLM2_135M, name="SmolLM2 135M")
        runs = {fmt: [*ARGS, "-o", fmt] for fmt in FORMATS} | EXTRA
        for suffix, args in runs.items():
            run = subprocess.run([str(bench), "-m", MODEL, *args], cwd=tmp, capture_output=True, text=True,
                                 timeout=600)
            if run.returncode != 0:
                print(run.stderr[-2000:], file=sys.stderr)
                return 1
            (out / f"here-cpu-smollm2-135m.{suffix}").write_text(run.stdout)
            print(f"wrote {out / f'here-cpu-smollm2-135m.{suffix}'}")
    subprocess.run([sys.executable, "-m", "tokspeed", "probe", "--device", "cpu", "-o", str(out / "here-cpu.toml")],
                   check=True, capture_output=True, timeout=600)
    print(f"wrote {out / 'here-cpu.toml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
