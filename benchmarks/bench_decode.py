"""Decode on this machine, predicted vs measured, in one run (not a test: numbers depend on the machine).

Prints, side by side:
  1. the probe's read / copy / triad bandwidth (1 GiB arrays) and fp32/bf16 matvec;
  2. the reference decoder's decode tok/s and MBU on the Qwen2.5-0.5B shape (random weights, fp32 and bf16);
  3. the same shape in HF transformers (if installed) and in llama.cpp (a GGUF of that shape written here);
  4. predicted vs measured decode tok/s for 3 model shapes x 3 KV depths, before calibration (the
     core's ideal bound) and after (this machine's eta/overhead fitted on the *other* two shapes).
and rewrites the results section of benchmarks/RESULTS.md.

    python benchmarks/bench_decode.py            # ~5-8 min on 2 cores
    python benchmarks/bench_decode.py --quick    # smaller depths and fewer steps
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MBU_SHAPE = "qwen2.5-0.5b"
ERROR_SHAPES = ["smollm2-360m", "qwen2.5-0.5b", "llama-3.2-1b"]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_decode:start -->", "<!-- bench_decode:end -->"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def probe(repeats: int):
    import torch

    from tokspeed.measure.detect import detect
    from tokspeed.measure.probe_cpu import probe_bandwidth, probe_matmul, probe_matvec

    m = detect()
    res = probe_bandwidth(2**30, repeats) + probe_matvec(8192, repeats=repeats) + probe_matmul(2048, repeats=repeats)
    return m, res, torch.get_num_threads()


def reference_decode(model: str, quant: str, hw, gen: int):
    from tokspeed.measure.runner import MeasureOptions, measure

    run = measure(MeasureOptions(model, quant=quant, contexts=[0], prompt=0, gen=gen), hw)
    return run["points"][0], run


def transformers_decode(model: str, weight_bytes: float, gen: int):
    """HF transformers on the same shape (random init, fp32, KV cache), timed like ours: one token
    per step, greedy argmax on the CPU. None if transformers is not installed."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    import warnings

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    from tokspeed.models.catalog import get_model

    s = get_model(model)
    cfg = transformers.Qwen2Config(vocab_size=s.vocab_size, hidden_size=s.d_model, intermediate_size=s.d_ff,
                                   num_hidden_layers=s.n_layers, num_attention_heads=s.n_heads,
                                   num_key_value_heads=s.n_kv_heads, tie_word_embeddings=s.tied_embeddings,
                                   rope_theta=s.rope_theta, max_position_embeddings=4096)
    with torch.inference_mode():
        lm = transformers.Qwen2ForCausalLM(cfg).eval()
        tok = torch.tensor([[1]])
        out = lm(input_ids=tok, use_cache=True)
        pkv = out.past_key_values
        for _ in range(2):   # warm-up
            out = lm(input_ids=out.logits[:, -1].argmax(-1, keepdim=True), past_key_values=pkv, use_cache=True)
            pkv = out.past_key_values
        steps = []
        for _ in range(gen):
            t0 = time.perf_counter()
            out = lm(input_ids=out.logits[:, -1].argmax(-1, keepdim=True), past_key_values=pkv, use_cache=True)
            pkv = out.past_key_values
            steps.append(time.perf_counter() - t0)
    step = sum(steps) / len(steps)
    return {"version": transformers.__version__, "decode_tok_s": 1 / step, "bytes": weight_bytes,
            "achieved_gbps": weight_bytes / step / 1e9}


def llamacpp_decode(model: str, gen: int, tmp: Path, hw):
    """llama.cpp (llama-cpp-python) on a GGUF of the same shape written here (F32, llama
    architecture: Qwen2's q/k/v biases, 1152 values a layer, are left out)."""
    try:
        import llama_cpp
    except ImportError:
        return None
    import torch

    from tokspeed.measure.backend_llamacpp import load_llama, measure_point
    from tokspeed.measure.decoder import DecoderConfig
    from tokspeed.measure.gguf_write import write_gguf
    from tokspeed.measure.runner import derive_rates
    from tokspeed.measure.weights import random_weights
    from tokspeed.models.catalog import get_model

    cfg = DecoderConfig.from_spec(get_model(model), qkv_bias=False)
    path = write_gguf(tmp / f"{model}-f32.gguf", cfg, random_weights(cfg, torch.float32))
    lm = load_llama(str(path), 256)
    measure_point(lm, 0, 0, 5)    # warm-up
    p = derive_rates(measure_point(lm, 0, 0, gen), hw, "F32")
    p["version"] = llama_cpp.__version__
    del lm
    path.unlink()
    return p


def error_sweep(hw, contexts, gen):
    """Each shape measured at each depth; predictions before calibration (ideal bound) and after
    (eta, overhead fitted by least squares on the other shapes' points: leave one shape out)."""
    from tokspeed.measure.calibrate import fit
    from tokspeed.measure.runner import MeasureOptions, add_predictions, measure

    runs = {}
    for m in ERROR_SHAPES:
        log(f"  measuring {m} at depths {contexts} ...")
        run = measure(MeasureOptions(m, quant="F32", contexts=contexts, prompt=0, gen=gen), hw)
        runs[m] = add_predictions(run, hw, None)
    rows = []
    for m, run in runs.items():
        others = [(p["predicted"]["bytes_per_step"], 1 / p["decode_tok_s"])
                  for o, r in runs.items() if o != m for p in r["points"]]
        cal = fit(others, hw.bandwidth_gbps, "torch", fitted_on="other shapes")
        for p in run["points"]:
            after = 1 / cal.seconds_per_token(p["predicted"]["bytes_per_step"])
            rows.append({"model": m, "context": p["context"], "measured": p["decode_tok_s"],
                         "bound": p["predicted"]["bound_tok_s"], "before_pct": p["error_pct"],
                         "after": after, "after_pct": (after / p["decode_tok_s"] - 1) * 100,
                         "eta": cal.eta_memory, "overhead_ms": cal.overhead_s * 1e3, "mbu": p["mbu"],
                         "gb": p["predicted"]["bytes_per_step"] / 1e9})
    all_pts = [(p["predicted"]["bytes_per_step"], 1 / p["decode_tok_s"]) for r in runs.values() for p in r["points"]]
    return rows, fit(all_pts, hw.bandwidth_gbps, "torch", fitted_on="all shapes")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite RESULTS.md")
    a = ap.parse_args(argv)
    import torch

    from tokspeed.hardware.catalog import hardware_from_toml
    from tokspeed.measure.profile import build_profile, write_profile

    t_start = time.time()
    gen = 8 if a.quick else 16
    contexts = [0, 512] if a.quick else [0, 512, 2048]
    tmp = Path(tempfile.mkdtemp(prefix="tokspeed-bench-"))
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    log("probing ...")
    machine, res, threads = probe(7)
    hw = hardware_from_toml(write_profile(build_profile(machine, res, threads, "benchmarks/bench_decode.py"),
                                          tmp / "local.toml"))
    bw = hw.bandwidth_gbps
    out(f"Machine: {machine.cpu_model}, {machine.physical_cores} cores, {machine.ram_bytes / 1e9:.1f} GB RAM; "
        f"torch {torch.__version__}, {threads} threads; {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    out()
    out("## 1. Probe (median of 7 after warm-up; 1 GiB arrays, 8192² matvec, 2048³ matmul)")
    out()
    out("| probe | median | best | spread |")
    out("|---|---:|---:|---:|")
    for r in res:
        out(f"| {r.name} | {r.value:,.2f} {r.unit} | {r.best:,.2f} | {r.timing.spread:.0%}"
            + (" (unstable)" if r.timing.unstable else "") + " |")
    out()
    out(f"## 2. Decode on the {MBU_SHAPE} shape (random weights, depth 0, {gen} steps), MBU vs probe read {bw:.1f} GB/s")
    out()
    out("| engine | decode tok/s | bytes/token | achieved GB/s | MBU |")
    out("|---|---:|---:|---:|---:|")
    ref = {}
    for q in ("F32", "BF16"):
        log(f"reference decoder {q} ...")
        p, _ = reference_decode(MBU_SHAPE, q, hw, gen)
        ref[q] = p
        out(f"| reference decoder (torch, {q}) | {p['decode_tok_s']:.2f} | {p['bytes_per_token'] / 1e9:.3f} GB | "
            f"{p['achieved_gbps']:.1f} | **{p['mbu']:.0%}** |")
    log("transformers ...")
    tf = transformers_decode(MBU_SHAPE, ref["F32"]["weight_bytes_per_token"], gen)
    if tf:
        out(f"| HF transformers {tf['version']} (F32, same shape) | {tf['decode_tok_s']:.2f} | "
            f"{tf['bytes'] / 1e9:.3f} GB | {tf['achieved_gbps']:.1f} | {tf['achieved_gbps'] / bw:.0%} |")
    else:
        out("| HF transformers | not installed | | | |")
    log("llama.cpp ...")
    lc = llamacpp_decode(MBU_SHAPE, gen, tmp, hw)
    if lc:
        out(f"| llama.cpp (llama-cpp-python {lc['version']}, F32 GGUF, same shape) | {lc['decode_tok_s']:.2f} | "
            f"{lc['bytes_per_token'] / 1e9:.3f} GB | {lc['achieved_gbps']:.1f} | {lc['mbu']:.0%} |")
    else:
        out("| llama.cpp | llama-cpp-python not installed | | | |")
    out()
    out("Bytes/token: every weight matrix once + one embedding row + the tied LM head + KV at depth 0 "
        "(transformers: the reference decoder's count for the same shape).")
    out()
    log("error sweep ...")
    rows, cal_all = error_sweep(hw, contexts, gen)
    out(f"## 3. Predicted vs measured decode (F32, random weights, {gen} steps per depth)")
    out()
    out("Before: `tokspeed.predict(engine='ideal')` on the probed profile (bandwidth / bytes). After: "
        "t = bytes / (bandwidth · eta) + overhead with (eta, overhead) fitted by least squares on the "
        "**other two** shapes (leave one shape out), so no point predicts itself.")
    out()
    out("| model | depth | GB/step | measured tok/s | MBU | before (ideal) | error | after (calibrated) | error | fit on others: eta, overhead |")
    out("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        out(f"| {r['model']} | {r['context']} | {r['gb']:.3f} | {r['measured']:.2f} | {r['mbu']:.0%} | {r['bound']:.2f} | "
            f"{r['before_pct']:+.0f} % | {r['after']:.2f} | {r['after_pct']:+.1f} % | {r['eta']:.3f}, {r['overhead_ms']:.2f} ms |")
    worst_before = max(abs(r["before_pct"]) for r in rows)
    worst_after = max(abs(r["after_pct"]) for r in rows)
    out()
    out(f"Worst |error|: before {worst_before:.0f} % (target 30 %), after {worst_after:.1f} % (target 15 %). "
        f"Fit on all {len(rows)} points: eta {cal_all.eta_memory:.3f}, overhead {cal_all.overhead_s * 1e3:.2f} ms/token, "
        f"rms error {cal_all.rms_rel_error:.1%}.")
    log("re-probing read bandwidth ...")
    from tokspeed.measure.probe_cpu import probe_bandwidth

    again = probe_bandwidth(2**30, 7)[0]
    out(f"Read bandwidth re-probed at the end: {again.value:.1f} GB/s (start: {bw:.1f}); the machine is shared, "
        f"so MBU moves with it. Total run time {time.time() - t_start:.0f} s.")
    if not a.no_write:
        write_results("\n".join(lines))
        log(f"results written to {RESULTS}")
    return 0


def write_results(section: str):
    head = ("# Benchmark results\n\nWritten by `python benchmarks/bench_decode.py` (the section between the markers "
            "is replaced on each run). Numbers are from this project's development machine unless stated.\n\n")
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.is_file() else head + f"{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    RESULTS.write_text(f"{before}{START}\n{section}\n{END}{after}", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
