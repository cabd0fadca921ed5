"""llama.cpp's CPU prompt kernels (priors.toml [CPUPP], [CPUPATH]): the float path's fraction of the FP32 peak comes
from benchmarks/bench_cpu_prefill.py's measurement, and a prediction follows from the path efficiencies by hand."""

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


def median_of_runs() -> dict:
    """{column: value} of the results file's "median of the runs" runs row."""
    text = RESULTS.read_text().split("<!-- bench_cpu_prefill:end -->")[1].split("<!-- bench_cpu_matvec:start -->")[0]
    head = re.search(r"^\| run \|(.*)\|$", text, re.M).group(1).split("|")
    row = re.search(r"^\| \*\*median of the runs\*\*[^|]*\|(.*)\|$", text, re.M).group(1).split("|")
    return {h.strip(): float(v) for h, v in zip(head, row)}


def test_the_prior_is_what_was_measured():
    """The float path's fraction lies between the measured F32's and F16's (no calibration row runs the FP32 path:
    scripts/fit_cpu_kernels.py keeps it); the attention's is the measured one; eta_compute is 1 because the
    catalog's fp32_tflops is the FMA peak the fractions are measured against."""
    med = median_of_runs()
    raw = tomllib.loads((REPO / "tokspeed" / "engines" / "priors.toml").read_text())["llama.cpp-cpu"]
    assert raw["eta_compute"] == {"default": 1.0}
    fmt = raw["eta_compute_format"]
    assert med["F32"] <= fmt["float"] <= med["F16"]
    assert raw["eta_attn"] == pytest.approx(med["attention at 4096"], abs=0.05)
    last = measured()                      # and the latest run's table lies around them
    for name in ("F32", "F16", "Q8_0", "Q4_0", "Q4_K_M"):
        assert last[name][1] <= med[name] * 1.15 and last[name][2] >= med[name] * 0.85, (name, last[name])


def test_desktop_prefill_by_hand():
    """llama-2-7b Q4_0, 512-token prompt, on the catalog's 8-core Zen 4 desktop (1.152 TFLOP/s FP32 peak): Q4_0 is
    repacked (repack.cpp q4_0_8x8) and multiplied with vpmaddubsw + vpmaddwd at 2 x the FP32 rate, so the layers'
    matmuls 2 x 512 x 32 x (4 x 4096^2 + 3 x 4096 x 11008) FLOPs run at eta[repack] x 2 x 1.152 TF; causal
    attention 4 x 32 x 4096 x (512 x 513 / 2) FLOPs at 0.4 of the FP32 peak."""
    from tokspeed.engines.profile import get_engine

    eta = get_engine("llama.cpp-cpu").eta_compute_format["repack"]
    layer = 4 * 4096 ** 2 + 3 * 4096 * 11008
    t = 2 * 512 * 32 * layer / (2 * 1.152e12 * eta) + 4 * 32 * 4096 * 512 * 513 / 2 / (1.152e12 * 0.4)
    p = predict("llama-2-7b", "ddr5-6000-2ch", quant="Q4_0", engine="llama.cpp-cpu", prompt=512, gen=0)
    assert p.prefill.bound == "compute"
    assert p.prefill.tok_s == pytest.approx(512 / t, rel=0.02)


@pytest.mark.parametrize("engine", ["llama.cpp", "llama.cpp-cpu", "ollama", "lm-studio"])
def test_a_probed_cpus_bf16_matmul_is_not_llama_cpps(engine):
    """A probe lists torch's BF16 matmul (oneDNN) as fp16_tflops, here 0.8 against 0.19 FP32: llama.cpp's CPU
    prompt kernels run FP32 SIMD / int8 dot products, so Q4_0 prefill (repacked, AVX2's int8 rate: 2 x 0.19 TF) is
    eta[repack] x 2 x 0.19 TFLOP/s over the matmuls' 2 x 32 x (4 x 4096^2 + 3 x 4096 x 11008) FLOPs a token
    (+ attention at 0.4): ~11.5 tok/s, not ~48."""
    from tokspeed.engines.profile import get_engine
    from tokspeed.hardware.spec import Hardware

    eta = get_engine("llama.cpp-cpu").eta_compute_format["repack"]

    hw = Hardware(id="probed", name="2-core AVX2 VM (measured)", kind="cpu", vendor="AMD", memory_gb=24,
                  bandwidth_gbps=40, fp16_tflops=0.8, fp32_tflops=0.19, cpu_threads=2)
    layer = 4 * 4096 ** 2 + 3 * 4096 * 11008
    t = 2 * 512 * 32 * layer / (2 * 0.19e12 * eta) + 4 * 32 * 4096 * 512 * 513 / 2 / (0.19e12 * 0.4)
    p = predict("llama-2-7b", hw, quant="Q4_0", engine=engine, prompt=512, gen=1)
    assert p.engine == ("llama.cpp-cpu" if engine.startswith("llama.cpp") else engine)   # ollama: llama.cpp-cpu below
    assert p.prefill.tok_s == pytest.approx(512 / t, rel=0.02)


def test_tflops_on_a_catalog_cpu_sets_what_its_matmuls_run_at():
    """--tflops on a CPU row is its SIMD rate: twice the catalog's 1.152 TFLOP/s doubles the matmul side of the
    prefill (7.34 s of matmuls and attention at 1.152 -> 3.67 s at 2.304; the step costs stay), and its int8
    figure keeps the row's 4 : 1."""
    from tokspeed.hardware.catalog import get_hardware, with_tflops

    base = get_hardware("ddr5-6000-2ch")
    one = predict("llama-2-7b", base, quant="Q4_0", engine="llama.cpp-cpu", prompt=512, gen=1)
    two = predict("llama-2-7b", with_tflops(base, 2.304), quant="Q4_0", engine="llama.cpp-cpu", prompt=512, gen=1)
    assert two.prefill.tok_s / one.prefill.tok_s == pytest.approx(2.0, rel=0.02)
    assert with_tflops(base, 2.304).int8_tops == pytest.approx(4 * 2.304)
