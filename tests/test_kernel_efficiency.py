"""Server engines' kernels by path (serving.kernel_efficiency, serving.kernel_shapes): times derived by hand from
the roofline and the fitted factors of kernel_efficiency.toml; held-out measured B200 kernels."""

import math
import sys
from pathlib import Path

import pytest

from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware
from tokspeed.serving import kernel_shapes as ks
from tokspeed.serving.kernel_efficiency import kernel_profile, path_key, table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import fit_kernel_efficiency as fke  # noqa: E402

B200 = get_hardware("b200")          # 8 TB/s HBM3e, 4,500 dense FP8 TFLOPS (catalog)
TRT = get_engine("tensorrt-llm", B200)   # eta_mem 0.9, eta_compute 0.7, eta_format q8 0.95, launch_s 4 us (priors.toml)
LAUNCH = 4e-6                            # one kernel's launch the step adds


def test_bf16_decode_gemm_on_b200_is_the_weight_stream_at_the_fitted_fraction():
    # m = 1 over an 8192 x 8192 BF16 weight: 134,217,728 bytes at 8e12 x 0.9 x stream(native), plus the
    # 2 x 8192 activations x 2 bytes at 8e12 x 0.9, plus one launch
    s = table()["native"]["stream"]
    want = 8192 * 8192 * 2 / (8e12 * 0.9 * s) + 2 * 8192 * 2 / (8e12 * 0.9) + LAUNCH
    assert ks.gemm_s(B200, TRT, "BF16", 1, 8192, 8192) == pytest.approx(want, rel=1e-9)
    # held out: AIConfigurator's B200 table measures 27.4 us (TensorRT-LLM 1.3.0rc20)
    assert ks.gemm_s(B200, TRT, "BF16", 1, 8192, 8192) == pytest.approx(27.4e-6, rel=0.15)
    assert ks.gemm_s(B200, TRT, "BF16", 1, 8192, 8192, fitted=False) == pytest.approx(
        8192 * 8192 * 2 / 7.2e12 + 32768 / 7.2e12 + LAUNCH, rel=1e-9)


def test_fp8_prefill_gemm_on_b200_is_the_fp8_peak_at_the_fitted_fraction():
    # m = n = k = 8192: 2 x 8192^3 FLOPs at 4,500 TFLOPS x 0.7 x compute(w8a8-fp8)
    c = table()["w8a8-fp8"]["compute"]
    want = 2 * 8192 ** 3 / (4500e12 * 0.7 * c) + LAUNCH
    assert ks.gemm_s(B200, TRT, "FP8", 8192, 8192, 8192) == pytest.approx(want, rel=1e-9)
    assert ks.gemm_s(B200, TRT, "FP8", 8192, 8192, 8192) == pytest.approx(470.9e-6, rel=0.15)   # measured, held out


def test_paths_by_format_and_units():
    h200 = get_hardware("h200-sxm")
    assert path_key(B200, "FP8-BLOCK", "tensorrt-llm") == "w8a8-fp8-block"
    assert path_key(B200, "MXFP4", "tensorrt-llm") == "w4a8-mxfp4"
    assert path_key(h200, "MXFP4", "vllm") == "w4a16"
    assert path_key(B200, "NVFP4", "tensorrt-llm") == "w4a4-fp4"


def test_llama_cpp_profiles_are_left_alone():
    eng = get_engine("llama.cpp-cuda", B200)
    assert kernel_profile(eng, B200, "Q4_K_M") is eng


def test_routed_experts_take_their_own_factors_relative_to_the_dense_path():
    t = table()["w8a8-fp8-block"]
    p = kernel_profile(TRT, B200, "FP8-BLOCK")
    assert p.expert_factors("FP8-BLOCK") == pytest.approx((t["expert_stream"] / t["stream"],
                                                           t["expert_compute"] / t["compute"]))
    # one token to 8 of 256 experts on one GPU: 8 experts' gate/up/down (3 x 7168 x 2048 x (1 + 4 / 128^2) bytes)
    # at 8e12 x 0.9 x 0.95 (q8) x expert_stream, activations at 8e12 x 0.9
    wb = 8 * 3 * 7168 * 2048 * (1 + 4 / 128 ** 2)
    act = (2 * 7168 + 8 * 3 * 2048) * 2
    want = wb / (8e12 * 0.9 * 0.95 * t["expert_stream"]) + act / (8e12 * 0.9) + LAUNCH
    assert ks.moe_s(B200, TRT, "FP8-BLOCK", 1, 7168, 2048, 8, 256, 1) == pytest.approx(want, rel=1e-9)


def test_fit_recovers_known_factors_and_shrinks_toward_one():
    # 400 synthetic rows made with c = 0.5, s = 0.8, memory-bound and compute-bound halves: the 5 prior rows
    # move each factor by about 5 / (200 + 5) of its log (0.5 -> 0.51)
    pts = [(tc, tm, 4e-6, 4e-6 + max(tc / 0.5, tm / 0.8)) for tc, tm in
           [(1e-8 * i, 1e-5) for i in range(1, 201)] + [(1e-3 * i, 1e-5) for i in range(1, 201)]]
    c, s, err = fke.fit(pts)
    assert c == pytest.approx(0.5, rel=0.05) and s == pytest.approx(0.8, rel=0.05)
    # two rows cannot pull a factor far from the prior: the 5 prior rows weigh more than they do
    c2, _, _ = fke.fit([(1e-4, 1e-6, 4e-4), (2e-4, 1e-6, 8e-4)])
    assert 0.25 < c2 < 1.0 and abs(math.log(c2)) < abs(math.log(0.25))


def test_the_table_is_written_through_the_toml_writer_as_the_loader_reads_it():
    import tomllib

    # fits as (c, s, median error, rows): factors rounded to 0.001 by hand, the W4A16 experts missed by 45 % > 30 %
    # (MAX_FIT_ERROR) and so kept at the prior 1, NVFP4 / MXFP4 taking FP8-BLOCK's dense and expert factors
    out = {"native": (1.11449, 0.9256, 0.05, 144), "w8a8-fp8": (0.7601, 0.511, 0.2, 144),
           "w8a8-fp8-block": (0.7391, 0.7284, 0.1, 144), "w4a16 experts": (0.597, 0.364, 0.45, 33),
           "w8a8-fp8-block experts": (0.6504, 0.8386, 0.19, 44)}
    text = fke.dumps(fke.table_data(out, (0.6318, 1.0, 0.12), 72), header=fke.HEADER)
    assert text.startswith("# Kernel-path efficiency factors") and "with 5 prior rows" in text
    t = tomllib.loads(text)
    assert t["applies"]["engines"] == ["tensorrt-llm"] and t["applies"]["compute_engines"] == ["vllm", "sglang"]
    assert (t["native"]["compute"], t["native"]["stream"]) == (1.114, 0.926)
    assert t["w8a8-fp8-block"]["of"] == "w8a8-fp8" and t["w8a8-fp8-block"]["formats"] == ["FP8-BLOCK"]
    assert (t["w8a8-fp8-block"]["expert_compute"], t["w8a8-fp8-block"]["expert_stream"]) == (0.65, 0.839)
    assert (t["w4a16"]["expert_compute"], t["w4a16"]["expert_stream"]) == (1.0, 1.0)
    assert "missed by 45 %" in t["w4a16"]["source"]
    for path in ("w4a4-fp4", "w4a8-mxfp4"):
        assert (t[path]["compute"], t[path]["stream"], t[path]["expert_compute"]) == (0.739, 0.728, 0.65)
    assert (t["attention"]["attn"], t["attention"]["kv"]) == (0.632, 1.0)
    assert "72 Hopper prefill rows" in t["attention"]["source"]


def test_the_shipped_table_is_what_the_fit_writes():
    # the fit is deterministic (a grid search): rerun on the committed rows it writes the committed file byte for
    # byte; a change to the roofline parts it fits against (serving.kernel_shapes) fails here until it is rerun
    assert fke.fitted_text() == fke.TABLE.read_text()
