"""llama.cpp's CPU prompt kernels per weight format (priors.toml [CPUPP]): the prior's fractions of the FP32
peak come from benchmarks/bench_cpu_prefill.py's measurement, and a prediction follows from them by hand."""

import re
import tomllib
from pathlib import Path

import pytest

from tokspeed import predict

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS-cpu-prefill.md"


def measured() -> dict:
    """{format: (median, low, high)} fraction of the FP32 peak from the results file's table."""
    out = {}
    for m in re.finditer(r"^\| ([^|]+?) \|.*\| \*\*([\d.]+)\*\* \[([\d.]+)-([\d.]+)\] \|", RESULTS.read_text(), re.M):
        out[m.group(1)] = tuple(float(m.group(i)) for i in (2, 3, 4))
    return out


def test_the_results_file_has_every_format_and_the_attention_row():
    rows = measured()
    assert {"F32", "F16", "Q8_0", "Q4_0", "Q4_K_M"} <= set(rows)
    assert any(k.startswith("Q4_0, attention") for k in rows)


def test_the_prior_sits_inside_what_was_measured():
    """Each format group's fraction lies in its format's measured range (rounds' min-max); float lies between
    F32's and F16's medians; the attention's within its (noisy) range; eta_compute is 1 because the catalog's
    fp32_tflops is the FMA peak the fractions are measured against."""
    rows = measured()
    raw = tomllib.loads((REPO / "tokspeed" / "engines" / "priors.toml").read_text())["llama.cpp-cpu"]
    assert raw["eta_compute"] == {"default": 1.0}
    fmt = raw["eta_compute_format"]
    for group, name in (("q8", "Q8_0"), ("legacy", "Q4_0"), ("kquant", "Q4_K_M")):
        _, lo, hi = rows[name]
        assert lo <= fmt[group] <= hi, (group, fmt[group], rows[name])
    assert rows["F32"][0] <= fmt["float"] <= rows["F16"][0]
    attn = next(v for k, v in rows.items() if k.startswith("Q4_0, attention"))
    assert attn[1] <= raw["eta_attn"] <= attn[2]


def test_desktop_prefill_by_hand():
    """llama-2-7b Q4_0, 512-token prompt, on the catalog's 8-core Zen 4 desktop (1.152 TFLOP/s FP32 peak):
    the layers' matmuls 2 x 512 x 32 x (4 x 4096^2 + 3 x 4096 x 11008) FLOPs at 0.8 of the peak (Q4_0), causal
    attention 4 x 32 x 4096 x (512 x 513 / 2) FLOPs at 0.4 of it: 7.35 s -> 69.7 tok/s (the old prior, 0.5 of
    the peak for everything: 43.8)."""
    layer = 4 * 4096 ** 2 + 3 * 4096 * 11008
    t = 2 * 512 * 32 * layer / (1.152e12 * 0.8) + 4 * 32 * 4096 * 512 * 513 / 2 / (1.152e12 * 0.4)
    p = predict("llama-2-7b", "ddr5-6000-2ch", quant="Q4_0", engine="llama.cpp-cpu", prompt=512, gen=0)
    assert p.prefill.bound == "compute"
    assert p.prefill.tok_s == pytest.approx(512 / t, rel=0.02)


def test_a_probed_cpus_bf16_matmul_is_not_llama_cpps():
    """A probe lists torch's BF16 matmul (oneDNN) as fp16_tflops, here 0.8 against 0.19 FP32: llama.cpp's CPU
    prompt kernels run FP32 SIMD / int8 dot products, so Q4_0 prefill is 0.8 x 0.19 TFLOP/s over the matmuls'
    2 x 32 x (4 x 4096^2 + 3 x 4096 x 11008) FLOPs a token (+ attention at 0.4): ~11.5 tok/s, not ~48."""
    from tokspeed.hardware.spec import Hardware

    hw = Hardware(id="probed", name="2-core AVX2 VM (measured)", kind="cpu", vendor="AMD", memory_gb=24,
                  bandwidth_gbps=40, fp16_tflops=0.8, fp32_tflops=0.19, cpu_threads=2)
    layer = 4 * 4096 ** 2 + 3 * 4096 * 11008
    t = 2 * 512 * 32 * layer / (0.19e12 * 0.8) + 4 * 32 * 4096 * 512 * 513 / 2 / (0.19e12 * 0.4)
    p = predict("llama-2-7b", hw, quant="Q4_0", engine="llama.cpp", prompt=512, gen=1)
    assert p.engine == "llama.cpp-cpu"
    assert p.prefill.tok_s == pytest.approx(512 / t, rel=0.02)
