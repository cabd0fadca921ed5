"""The one home of an operator's rate (tokspeed.engines.rates): a Rate's fields by hand, op_time dividing by it, and
the parse-once values it reads (the weight format's kernel group, the engine version's era)."""

import json
import math

import pytest

from tokspeed.engines import eras
from tokspeed.engines.profile import EngineProfile, get_engine
from tokspeed.engines.rates import BOARD_POWER, INT8_KERNELS, MMQ_BOUND, compute_rate, matmul_rate
from tokspeed.errors import UserError
from tokspeed.hardware.spec import Hardware
from tokspeed.ledger import Op, Role, Scope
from tokspeed.quant.format_key import FormatKey, format_key
from tokspeed.timing import op_time

# an RTX 4090 as its data sheet lists it: 165.2 dense FP16 TFLOPS (FP32 accumulate), 82.6 FP32, 128 SMs, 450 W
RTX4090 = Hardware(id="g", name="NVIDIA GeForce RTX 4090", kind="gpu", vendor="NVIDIA", memory_gb=24,
                   bandwidth_gbps=1008, fp16_tflops=165.2, fp32_tflops=82.6, fp16_accumulate_2x=True, tdp_w=450.0)
PROF = EngineProfile("t", eta_compute={"default": 0.4}, eta_compute_format={"kquant": 0.8}, fp16_accumulate=True,
                     quant_flops_per_core_cycle=500.0, pj_per_flop=2.0, gemm_half_tokens=64.0, eta_matvec=0.25,
                     mmq_dp4a=True)


def test_a_prompt_matmuls_rate_field_by_field():
    """512 tokens of Q4_K_M under MMQ on an RTX 4090: listed FP16 165.2 TF x 2 (FP16 accumulate on GeForce), eta =
    0.4 x 0.8 x 512 / (512 + 64) x 2 = 0.569; MMQ bound 82.6e12 / (2 x 128 lanes) core cycles/s x 500 FLOPs x the
    same ramp = 143.4 TF; board power 450 W / 2 pJ x 2 (INT8 tensor cores) = 450 TF; soft minimum (p = 4)."""
    r = matmul_rate(RTX4090, PROF, "Q4_K_M", 512)
    ramp = 512 / (512 + 64)
    eta = 0.4 * 0.8 * ramp * 2
    qmax = 82.6e12 / 256 * 500 * ramp
    pmax = 450 / 2e-12 * 2
    assert r.unit == "INT8 tensor cores (MMQ)" and r.kernel == "mma" and r.listed == "FP16"
    assert r.peak == pytest.approx(165.2e12) and r.scale == 2.0 and r.eta == pytest.approx(eta, rel=1e-12)
    assert [b.name for b in r.bounds] == [MMQ_BOUND, BOARD_POWER]
    assert r.bound(MMQ_BOUND) == pytest.approx(qmax, rel=1e-12) and r.bound(BOARD_POWER) == pytest.approx(pmax)
    expect = ((165.2e12 * eta) ** -4 + qmax ** -4 + pmax ** -4) ** -0.25
    assert r.value == pytest.approx(expect, rel=1e-12) and r.bound(INT8_KERNELS) == 0.0


def test_op_time_divides_by_the_rate_and_the_stream():
    """A matmul with no bytes takes flops / Rate.value; one with no FLOPs takes bytes / the engine's stream
    (1008 GB/s x eta_mem 1, no kernel bound)."""
    mm = Op("matmul", Role.MLP, Scope.DENSE, "tensor", 1, flops=1e12)
    t, bound = op_time(mm, RTX4090, PROF, "Q4_K_M", 512)
    assert bound == "compute" and t == 1e12 / matmul_rate(RTX4090, PROF, "Q4_K_M", 512).value
    rd = Op("read", Role.MLP, Scope.DENSE, "tensor", 1, weight_bytes=1008e6)
    t, bound = op_time(rd, RTX4090, PROF, "Q4_K_M", 1)
    assert bound == "memory" and t == pytest.approx(1e-3, rel=1e-12)


def test_one_token_runs_on_the_cuda_cores_at_the_fitted_matvec_fraction():
    """Up to 8 tokens the rate stays the tensor figure x eta_matvec (0.4 x 0.8 x 0.25 x 2), no bounds, and the unit
    is llama.cpp's MMVQ on the CUDA cores."""
    r = matmul_rate(RTX4090, PROF, "Q4_K_M", 1)
    assert r.unit == "CUDA cores (DP4A, MMVQ)" and r.bounds == ()
    assert r.value == pytest.approx(165.2e12 * 0.4 * 0.8 * 0.25 * 2, rel=1e-12)


def test_attention_and_elementwise_rates():
    """The attention core: 165.2 TF x 0.4 x eta_attn 1 x 2, at most the listed peak (132.2 TF), the FP16 power bound
    (450 / 2 = 225 TF) in a tiled pass; a norm: the FP32 figure 82.6 TF x 0.4 on the CUDA cores."""
    a = compute_rate(RTX4090, PROF, "Q4_K_M", 512, "tensor", attn=True)
    assert a.unit == "tensor cores (FP16)" and a.bound(BOARD_POWER) == pytest.approx(225e12)
    assert a.value == pytest.approx(((165.2e12 * 0.8) ** -4 + 225e12 ** -4) ** -0.25, rel=1e-12)
    v = compute_rate(RTX4090, PROF, "Q4_K_M", 512, "vector")
    assert v.unit == "CUDA cores" and v.value == pytest.approx(82.6e12 * 0.4, rel=1e-12) and v.bounds == ()


def test_a_format_is_its_name_parsed_once():
    f = format_key("Q4_K_M")
    assert isinstance(f, str) and f == "Q4_K_M" and f.group == "kquant" and not f.f32 and f.quantized
    assert format_key(f) is f and json.dumps({"quant": f}) == '{"quant": "Q4_K_M"}'
    assert format_key("F32").f32 and format_key("F16").group == "float"
    with pytest.raises(AttributeError):
        f.group = "float"
    with pytest.raises(UserError, match="no kernel group"):
        format_key("NF4")


def test_predict_carries_the_parsed_format():
    from tokspeed.predict import ScaleOptions
    from tokspeed.prediction_setup import resolve
    from tokspeed.workload import Workload

    r = resolve("llama-3-8b", "rtx-4090", "q4_k_m", "f16", "llama.cpp", None, ScaleOptions(), Workload())
    assert type(r.quant) is FormatKey and r.quant == "Q4_K_M" and r.quant.group == "kquant"


def test_the_engine_version_is_parsed_once(monkeypatch):
    """get_engine with a build and -fa on parses the build once (it used to at four places: the -fa check, its
    kernel check, the era's entry and the era asked for)."""
    calls = []
    real = eras.version_month
    monkeypatch.setattr(eras, "version_month", lambda *a: calls.append(a) or real(*a))
    prof = get_engine("llama.cpp-cuda", version="b6000", flash_attention=True)
    assert len(calls) == 1 and prof.version == eras.era_of("llama.cpp-cuda", "b6000")
    v = eras.parse_version("llama.cpp-cuda", "2024-05")
    assert (v.family, v.text, v.month, v.label) == ("llama.cpp", "2024-05", "2024-05", "2024")
    assert eras.parse_version("llama.cpp-cuda", v) is v and eras.parse_version("llama.cpp-cuda", None) is None


def test_the_fits_evaluator_takes_the_same_rates():
    """calibration.fast over a few rows equals predict() (it takes each operator kind's Rate from compute_rate)."""
    np = pytest.importorskip("numpy")
    from tokspeed.calibration import DEFAULT_CSV, load_rows
    from tokspeed.calibration.evaluate import predicted_tok_s
    from tokspeed.calibration.fast import build, predict_rows

    rows = [r for r in load_rows(DEFAULT_CSV) if not r.skip and r.engine == "llama.cpp-cuda"][:12]
    prof = {r.era: get_engine("llama.cpp-cuda", version=r.era or None) for r in rows}
    fast = predict_rows(build(rows), prof)
    slow = np.array([predicted_tok_s(r, prof[r.era]) for r in rows])   # one profile for both (no pooling by device)
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(fast, slow))
