"""GPU check, one prepared script (run it where a CUDA GPU is available, e.g. an H200):

  1. probe the GPU: on-device read/copy/triad bandwidth vs the catalog's vendor peak, matmul TFLOP/s,
     pinned host->device copy;
  2. the reference decoder in bf16 on the Llama 3 8B shape (random weights) at KV depths
     1K, 8K, 32K and 128K: measured decode tok/s next to the prediction for the probed profile
     (ideal bound) and for the catalog device;
  3. append the numbers to benchmarks/RESULTS.md (section between the gpu markers).

    python benchmarks/bench_gpu.py [--catalog h200] [--depths 1024,8192,32768,131072] [--gen 32]

Status: written without a GPU (none was lent to the task that wrote it); the CPU path it shares
(probe_cpu, decoder, runner) is tested, the CUDA calls are the documented torch APIs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
START, END = "<!-- bench_gpu:start -->", "<!-- bench_gpu:end -->"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", default="h200", help="catalog device to compare with (default h200)")
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--depths", default="1024,8192,32768,131072")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to do", file=sys.stderr)
        return 2
    from tokspeed.hardware.catalog import get_hardware, hardware_from_toml
    from tokspeed.measure.detect import detect
    from tokspeed.measure.probe_gpu import probe_gpu
    from tokspeed.measure.profile import build_profile, write_profile
    from tokspeed.measure.runner import MeasureOptions, add_predictions, measure

    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    t0 = time.time()
    machine = detect()
    res = probe_gpu(quick=False, repeats=7)
    prof = hardware_from_toml(write_profile(build_profile(machine, res, torch.get_num_threads(), "benchmarks/bench_gpu.py"),
                                            Path(tempfile.mkdtemp()) / "gpu.toml"))
    cat = get_hardware(a.catalog)
    out(f"GPU: {machine.gpus[0].name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    out()
    out("| probe | median | best | spread |")
    out("|---|---:|---:|---:|")
    for r in res:
        out(f"| {r.name} | {r.value:,.1f} {r.unit} | {r.best:,.1f} | {r.timing.spread:.0%} |")
    out()
    out(f"Read bandwidth {prof.bandwidth_gbps:,.0f} GB/s = {prof.bandwidth_gbps / cat.bandwidth_gbps:.0%} of the "
        f"{cat.name} vendor peak {cat.bandwidth_gbps:,.0f} GB/s.")
    out()
    depths = [int(d) for d in a.depths.split(",")]
    run = measure(MeasureOptions(a.model, device="cuda", quant="BF16", contexts=depths, prompt=0, gen=a.gen), prof)
    measured = add_predictions(run, prof, None)["points"]
    vs_cat = [p["predicted"] for p in add_predictions(run, cat, None)["points"]]
    out(f"{a.model} BF16, random weights, reference decoder (eager, no CUDA graphs), {a.gen} steps per depth")
    out()
    out("| depth | GB/step | measured tok/s | MBU (probe) | ideal on probe | error | ideal on catalog | stages (ms) |")
    out("|---:|---:|---:|---:|---:|---:|---:|---|")
    for p, c in zip(measured, vs_cat):
        st = ", ".join(f"{k} {v:.2f}" for k, v in p["stages_ms"].items())
        out(f"| {p['context']} | {p['bytes_per_step'] / 1e9:.2f} | {p['decode_tok_s']:.1f} | {p['mbu']:.0%} | "
            f"{p['predicted']['tok_s']:.1f} | {p['error_pct']:+.0f} % | {c['tok_s']:.1f} | {st} |")
    out()
    out(f"Total {time.time() - t0:.0f} s.")
    if not a.no_write:
        res_md = ROOT / "benchmarks" / "RESULTS.md"
        text = res_md.read_text(encoding="utf-8") if res_md.is_file() else "# Benchmark results\n"
        if START not in text:
            text += f"\n## GPU\n\n{START}\n{END}\n"
        head, rest = text.split(START, 1)
        res_md.write_text(f"{head}{START}\n" + "\n".join(lines) + f"\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
