"""Which units llama.cpp's quantized prompt matmuls run on, per device (tokspeed.engines.mmq): INT8 tensor cores from
Turing on, DP4A on Pascal cc 6.1 (and on Volta below 64 tokens), dequantise-then-GEMM on GP100 and on Volta from 64
tokens. Figures by hand from the vendor data sheets (Tesla P40: 11.76 FP32 TFLOPS, 47 INT8 TOPS by DP4A)."""

import math
from dataclasses import replace

import pytest

from tokspeed.calibration import DEFAULT_CSV, load_rows
from tokspeed.calibration.evaluate import predicted_tok_s
from tokspeed.engines.mmq import DP4A_OPS_PER_FP32_FLOP, MMQ_DP4A_MAX_BATCH_SIZE, mmq_unit
from tokspeed.engines.profile import EngineProfile, get_engine
from tokspeed.engines.rates import INT8_OPS_PER_FP16_ENERGY
from tokspeed.hardware.spec import Hardware
from tokspeed.ledger import Op, Role, Scope
from tokspeed.engines.rates import BOARD_POWER, MMQ_BOUND, matmul_rate, mmq_kernel
from tokspeed.explain.rates_text import matmul_how
from tokspeed.timing import op_time


def tiled_bounds(hw, prof, quant, tokens):
    """(MMQ bound, board-power bound) of a weight matmul's Rate (0 = none)."""
    r = matmul_rate(hw, prof, quant, tokens)
    return r.bound(MMQ_BOUND), r.bound(BOARD_POWER)


def weight_matmul_peak(hw, prof, quant, tokens):
    """(listed peak, usable multiple) of a weight matmul's Rate."""
    r = matmul_rate(hw, prof, quant, tokens)
    return r.peak, r.scale


def prompt_matmul_how(hw, prof, quant, tokens):
    return matmul_how(matmul_rate(hw, prof, quant, tokens), hw, prof, quant, tokens)


def _nv(name, fp16=0.0, fp32=10.0, tdp=250.0, bw=500.0):
    return Hardware(id="x", name=name, kind="gpu", vendor="NVIDIA", memory_gb=24, bandwidth_gbps=bw,
                    fp16_tflops=fp16, fp32_tflops=fp32, tdp_w=tdp)


# the Tesla P40 data sheet: 3,840 CUDA cores at 1,531 MHz = 11.76 FP32 TFLOPS (its FP16, 1/64 of that, unlisted)
P40 = _nv("NVIDIA Tesla P40", fp32=11.76)
V100 = _nv("NVIDIA Tesla V100 SXM2 32GB", fp16=125.0, fp32=15.7, tdp=300.0)
P100 = _nv("NVIDIA Tesla P100 PCIe 16GB", fp16=18.7, fp32=9.3)
MATMUL = Op("matmul", Role.MLP, Scope.DENSE, "tensor", 1, flops=1e12, weight_bytes=1e6)
PROF = EngineProfile("t", eta_compute={"default": 0.5}, pj_per_flop=10.0, quant_flops_per_core_cycle=1000.0,
                     mmq_dp4a=True, gemm_half_tokens=0.0)


@pytest.mark.parametrize("name, tokens, unit", [
    ("NVIDIA Tesla P40", 512, "dp4a"), ("NVIDIA GeForce GTX 1080 Ti", 16, "dp4a"), ("NVIDIA TITAN Xp", 512, "dp4a"),
    ("NVIDIA Tesla P100 PCIe 16GB", 512, ""), ("NVIDIA Tesla P100 PCIe 16GB", 16, ""),
    ("NVIDIA Tesla V100 SXM2 32GB", 32, "dp4a"), ("NVIDIA Tesla V100 SXM2 32GB", 64, ""),
    ("NVIDIA Tesla V100 PCIe 16GB", 512, ""), ("NVIDIA Tesla M40", 512, ""),
    ("NVIDIA GeForce RTX 2080 Ti", 512, "mma"), ("NVIDIA T4", 512, "mma"), ("NVIDIA A100 80GB SXM4", 512, "mma"),
    ("NVIDIA H100 SXM", 16, "mma"), ("NVIDIA GeForce RTX 4090", 512, "mma"),
    # names the short patterns must not take: Maxwell's GTX TITAN X and MX110, a Jetson Orin Nano, a Quadro RTX
    ("NVIDIA GeForce GTX TITAN X", 512, ""), ("NVIDIA GeForce MX110", 512, ""), ("NVIDIA Jetson Nano", 512, ""),
    ("NVIDIA Jetson Orin Nano Super Developer Kit", 512, "mma"), ("NVIDIA Quadro RTX 4000", 512, "mma"),
    ("NVIDIA TITAN X (Pascal)", 512, "dp4a"), ("NVIDIA GeForce GT 1030", 512, "dp4a"),
    ("NVIDIA Jetson TX2", 16, "dp4a"), ("NVIDIA Tesla K40m", 512, ""),
])
def test_units_follow_llama_cpp_by_compute_capability(name, tokens, unit):
    assert mmq_unit(_nv(name), tokens) == unit


def test_other_vendors_keep_the_engines_mma_path():
    mi = Hardware(id="x", name="AMD Instinct MI300X", kind="gpu", vendor="AMD", memory_gb=192,
                  bandwidth_gbps=5300.0, fp16_tflops=1307.4, fp32_tflops=163.4)
    assert mmq_unit(mi, 512) == "mma"
    assert MMQ_DP4A_MAX_BATCH_SIZE == 64          # ggml-cuda mmq.cuh


def test_an_engine_without_dp4a_kernels_or_an_older_mmq_era_keeps_the_float_path():
    # no mmq_dp4a: a P40's quantized matmuls dequantise and multiply in FP32; no MMQ bound
    plain = EngineProfile("t", eta_compute={"default": 0.5}, quant_flops_per_core_cycle=1000.0)
    assert mmq_kernel(plain, P40, "Q4_0", 512) == "" and tiled_bounds(P40, plain, "Q4_0", 512) == (0.0, 0.0)
    assert weight_matmul_peak(P40, plain, "Q4_0", 512) == (pytest.approx(11.76e12), 1.0)
    # an era without MMQ on INT8 tensor cores (quant_flops_per_core_cycle 0) still runs DP4A on Pascal, without the
    # bound (none fitted), and dequantises on Turing and later
    old = EngineProfile("t", eta_compute={"default": 0.5}, mmq_dp4a=True)
    assert mmq_kernel(old, P40, "Q4_0", 512) == "dp4a" and tiled_bounds(P40, old, "Q4_0", 512)[0] == 0.0
    assert mmq_kernel(old, _nv("NVIDIA GeForce RTX 4090"), "Q4_0", 512) == ""
    assert mmq_kernel(PROF, P40, "F16", 512) == ""          # float weights: no MMQ anywhere


def test_the_shipped_llama_cpp_cuda_runs_dp4a_in_every_era():
    for era in ("2023", "2024", "2025"):
        assert mmq_kernel(get_engine("llama.cpp-cuda", version=era), P40, "Q4_K_M", 512) == "dp4a"


def test_a_calibration_row_listing_pascal_fp16_takes_the_fp32_rate():
    # a row that lists a P40's FP16 (11.76 / 64 = 0.18 TFLOPS): llama.cpp multiplies F16 weights in FP32 there, so
    # the row's matmul peak is the catalog's FP32 figure, 3,840 cores x 2 x 1.531 GHz = 11.76 TFLOPS
    from tokspeed.calibration.rows import _row_fp16_tflops

    row = {"hardware": "NVIDIA Tesla P40", "fp16_TFLOPS": "0.18"}
    assert _row_fp16_tflops(row) == pytest.approx(3840 * 2 * 1.531e9 / 1e12, rel=0.001)
    assert _row_fp16_tflops({"hardware": "NVIDIA GeForce RTX 4090", "fp16_TFLOPS": "165.2"}) == 165.2
    assert _row_fp16_tflops({"hardware": "no such device", "fp16_TFLOPS": ""}) == 0.0


def test_pascal_quantized_matmuls_run_at_the_dp4a_rate_by_hand():
    # peak: 4 x 11.76 = 47.04 TOPS (the data sheet's 47); x eta_compute 0.5 = 23.52 TFLOP/s
    assert DP4A_OPS_PER_FP32_FLOP == 4.0
    assert weight_matmul_peak(P40, PROF, "Q4_0", 512) == (pytest.approx(47.04e12), 1.0)
    # MMQ bound: cores x clock = 11.76e12 / (2 x 128 lanes) = 45.94e9/s; the tile work (1000 FLOPs per core
    # cycle) and the DP4A issue (128 lanes x 8 ops = 1024 per cycle) share the lanes: 1 / (1/1000 + 1/1024) = 505.9
    # FLOPs per cycle = 23.24 TFLOP/s; board power 250 W / 10 pJ = 25 TFLOP/s, not doubled: DP4A is no INT8 tensor core
    qmax, pmax = tiled_bounds(P40, PROF, "Q4_0", 512)
    assert qmax == pytest.approx(11.76e12 / 256 / (1 / 1000.0 + 1 / 1024.0))
    assert pmax == pytest.approx(25e12)
    expect = sum(x ** -4.0 for x in (23.52e12, qmax, 25e12)) ** -0.25
    t, _ = op_time(MATMUL, P40, PROF, "Q4_0", tokens=512)
    assert math.isclose(t, 1e12 / expect, rel_tol=1e-9)
    # one token (matrix-vector kernels) keeps the FP32 figure: no tiles
    assert weight_matmul_peak(P40, PROF, "Q4_0", 1) == (pytest.approx(11.76e12), 1.0)


def test_volta_leaves_mmq_for_cublas_from_64_tokens():
    # 512 tokens: dequantise and multiply on the FP16 tensor cores: 125 x 0.5 = 62.5 TF, no MMQ bound, and the
    # FP16 energy: 300 W / 10 pJ = 30 TF (not 60)
    qmax, pmax = tiled_bounds(V100, PROF, "Q4_0", 512)
    assert qmax == 0.0 and pmax == pytest.approx(30e12)
    t, _ = op_time(MATMUL, V100, PROF, "Q4_0", tokens=512)
    assert math.isclose(t, 1e12 / ((62.5e12) ** -4 + (30e12) ** -4) ** -0.25, rel_tol=1e-9)
    # 32 tokens: MMQ with DP4A: 4 x 15.7 = 62.8 TOPS; MMQ bound 15.7e12 / (2 x 64 lanes) core cycles/s x
    # 1 / (1/1000 + 1/(64 x 8)) FLOPs per cycle
    assert weight_matmul_peak(V100, PROF, "Q4_0", 32) == (pytest.approx(62.8e12), 1.0)
    assert tiled_bounds(V100, PROF, "Q4_0", 32)[0] == pytest.approx(15.7e12 / 128 / (1 / 1000.0 + 1 / 512.0))


def test_gp100_dequantises_to_fp16_without_an_mmq_bound():
    # half2 FP16 at 18.7 TFLOPS x 0.5; no DP4A on cc 6.0, so no MMQ bound and no INT8 energy
    qmax, pmax = tiled_bounds(P100, PROF, "Q4_0", 512)
    assert qmax == 0.0 and pmax == pytest.approx(25e12)
    assert weight_matmul_peak(P100, PROF, "Q4_0", 512) == (pytest.approx(18.7e12), 1.0)


def test_turing_and_later_keep_the_int8_tensor_core_energy():
    t4 = _nv("NVIDIA T4", fp16=65.0, fp32=8.1, tdp=70.0)
    assert tiled_bounds(t4, PROF, "Q4_0", 512)[1] == pytest.approx(70 / 10e-12 * INT8_OPS_PER_FP16_ENERGY)


def test_explain_names_the_dp4a_path():
    line = prompt_matmul_how(P40, PROF, "Q4_0", 512)
    assert "CUDA cores (DP4A, MMQ)" in line and "4 x FP32 11.8 TFLOP/s" in line and "INT8 tensor cores" not in line
    # the MMQ bound: 1000 FLOPs of tile work and 128 lanes x 8 = 1,024 of DP4A per core cycle: 23.2 TFLOP/s (above)
    assert "MMQ bound 23.2 TFLOP/s (1000 FLOPs per core cycle of tile work and 1,024 of DP4A" in line
    # F16 weights: cuBLAS on the FP32 units (the P40 lists no usable FP16): 11.76 x 0.5
    assert "CUDA cores (FP32) 5.88 TFLOP/s" in prompt_matmul_how(P40, PROF, "F16", 512)


def test_shipped_llama_cpp_runs_a_p40s_prompt_matmuls_at_the_dp4a_rate_by_hand():
    """The 2025 llama.cpp-cuda profile on a P40, over 512 tokens: soft minimum (p = 4) of the DP4A rate 47.04 TOPS x
    eta_compute x eta_compute_format x m(512), the MMQ bound 45.94e9 core cycles/s x 1 / (1/q + 1/1024) x m(512),
    and the board power 250 W / pj_per_flop (FP16 energy: DP4A is no INT8 tensor core), with the shipped values;
    and more than twice what the same profile gives without its DP4A kernels (the FP32 figure)."""
    prof = get_engine("llama.cpp-cuda", version="2025")
    m = 512 / (512 + prof.gemm_half_tokens)
    rates = (47.04e12 * min(prof.eta_compute["gpu"] * prof.eta_compute_format["legacy"] * m, 1.0),
             11.76e12 / 256 / (1 / prof.quant_flops_per_core_cycle + 1 / 1024) * m,
             250 / (prof.pj_per_flop * 1e-12))
    t, _ = op_time(MATMUL, P40, prof, "Q4_0", tokens=512)
    assert math.isclose(1e12 / t, sum(x ** -4.0 for x in rates) ** -0.25, rel_tol=1e-9)
    t_fp32, _ = op_time(MATMUL, P40, replace(prof, mmq_dp4a=False), "Q4_0", tokens=512)
    assert t_fp32 > 2 * t


@pytest.mark.parametrize("hw", [P40, V100, P100, _nv("NVIDIA GeForce GTX 1080 Ti", fp32=11.34)],
                         ids=lambda h: h.name)
def test_expected_never_beats_the_ideal_bound_on_older_parts(hw):
    """The ideal bound takes the fastest units the part has for the format (DP4A on Pascal), so llama.cpp's DP4A
    kernels stay below it: prefill and batched decode, every era."""
    from tokspeed.predict import predict

    for era in ("2023", "2025"):
        for quant in ("Q4_0", "Q4_K_M", "Q8_0", "F16"):
            for prompt, batch in ((512, 1), (32, 1), (0, 32), (0, 64)):
                p = predict("llama-2-7b", hw, quant=quant, prompt=prompt, gen=0 if prompt else 8, context=0,
                            batch=batch, engine_version=era)
                part = p.prefill if prompt else p.decode
                got = part.tok_s if prompt else part.aggregate_tok_s
                bound = part.bound_tok_s if prompt else part.bound_tok_s * batch
                assert got <= bound * (1 + 1e-9), (era, quant, prompt, batch)


def test_an_f32_model_gets_no_fp16_accumulate_doubling_on_geforce():
    """F32 weights and activations run on the FP32 units (SGEMM): the GeForce doubling of the tensor figure does not
    apply, to the matmuls or to the attention: 82.6 x 0.5 = 41.3 TFLOP/s."""
    g = Hardware(id="x", name="NVIDIA GeForce RTX 4090", kind="gpu", vendor="NVIDIA", memory_gb=24,
                 bandwidth_gbps=1008, fp16_tflops=165.2, fp32_tflops=82.6, fp16_accumulate_2x=True)
    prof = EngineProfile("t", eta_compute={"default": 0.5}, fp16_accumulate=True, gemm_half_tokens=0.0)
    t, _ = op_time(MATMUL, g, prof, "F32", tokens=512)
    assert math.isclose(t, 1e12 / 41.3e12, rel_tol=1e-9)
    attn = Op("attention", Role.ATTN_CORE, Scope.DENSE, "tensor", 1, flops=1e12, kv_read_bytes=1.0)
    t, _ = op_time(attn, g, prof, "F32", tokens=512)
    assert math.isclose(t, 1e12 / 41.3e12, rel_tol=1e-9)
    t, _ = op_time(MATMUL, g, prof, "F16", tokens=512)          # F16: 165.2 x 2 x 0.5, at most the listed peak
    assert math.isclose(t, 1e12 / 165.2e12, rel_tol=1e-9)


def test_fast_evaluator_equals_predict_on_older_parts():
    """The fit's numpy mirror (calibration.fast) against predict() on a calibration row moved onto the older parts
    and a GeForce card: every weight format, prompts below and above Volta's 64-token switch, batched decode across it,
    the 2023 era (DP4A without an MMQ bound) and the 2025 one."""
    np = pytest.importorskip("numpy")
    from tokspeed.calibration.fast import build, predict_rows

    base = next(r for r in load_rows(DEFAULT_CSV) if not r.skip and r.engine == "llama.cpp-cuda"
                and r.kind == "prefill" and r.model == "llama-2-7b")
    shapes = [dict(metric="prefill", prompt=512), dict(metric="prefill", prompt=32),
              dict(metric="decode_aggregate", prompt=0, gen=8, batch=32),
              dict(metric="decode_aggregate", prompt=0, gen=8, batch=64)]
    gpus = (P40, V100, P100, Hardware(id="g", name="NVIDIA GeForce RTX 4090", kind="gpu", vendor="NVIDIA",
                                      memory_gb=24, bandwidth_gbps=1008, fp16_tflops=165.2, fp32_tflops=82.6,
                                      fp16_accumulate_2x=True, tdp_w=450))
    moved = [replace(base, hw=hw, quant=q, era=era, **shape) for hw in gpus for q in ("Q4_0", "Q4_K_M", "F16", "F32")
             for era in ("2023", "2025") for shape in shapes]
    prof = {era: get_engine("llama.cpp-cuda", version=era) for era in ("2023", "2025")}
    fast = predict_rows(build(moved), prof)
    slow = np.array([predicted_tok_s(r, prof[r.era]) for r in moved])   # one profile for both (no pooling by device)
    assert np.allclose(fast, slow, rtol=1e-9)


def test_explain_names_the_units_a_stage_runs_on():
    """The stage table names the units the kernels llama.cpp's CUDA backend picks run on (ggml-cuda.cu
    ggml_cuda_mul_mat): a V100's 32-token prompt under MMQ on DP4A and its 512-token one through cuBLAS on the FP16
    tensor cores, a P40's on DP4A, a T4's on INT8 tensor cores (MMQ from Turing, mmq.cuh); one token (at most
    MMVQ_MAX_BATCH_SIZE = 8) under MMVQ on the CUDA cores with DP4A -- scalar on GP100, which has none -- or, for F16
    weights, MMVF on the CUDA cores (mmvf.cu; four tokens of F16 go to MMF's tensor-core tiles, mmf.cu): not the tensor
    cores; an F32 model's prompt on the FP32 units of an RTX 4090. Norms stay on the CUDA cores."""
    from tokspeed.explain.journey import build_journey
    from tokspeed.predict import predict

    g = Hardware(id="g", name="NVIDIA GeForce RTX 4090", kind="gpu", vendor="NVIDIA", memory_gb=24,
                 bandwidth_gbps=1008, fp16_tflops=165.2, fp32_tflops=82.6, fp16_accumulate_2x=True)
    t4 = _nv("NVIDIA T4", fp16=65.0, fp32=8.1, tdp=70.0)

    def unit(hw, quant, prompt, label="QKV projection"):
        p = predict("llama-2-7b", hw, quant=quant, prompt=prompt, gen=0 if prompt else 1, context=0)
        return next(s.unit for s in build_journey(p, "prefill" if prompt else "decode").stages if s.label == label)

    assert unit(V100, "Q4_0", 32) == "CUDA cores (DP4A, MMQ)"
    assert unit(V100, "Q4_0", 512) == "tensor cores (FP16)"
    assert unit(P40, "Q4_0", 512) == "CUDA cores (DP4A, MMQ)"
    assert unit(t4, "Q4_0", 512) == "INT8 tensor cores (MMQ)"
    assert unit(g, "F32", 512) == "CUDA cores (FP32)"
    assert unit(g, "Q4_K_M", 0) == "CUDA cores (DP4A, MMVQ)"
    assert unit(P100, "Q4_0", 0) == "CUDA cores (MMVQ)"
    assert unit(g, "F16", 0) == "CUDA cores (matrix-vector)"                     # MMVF: one token
    p = predict("llama-2-7b", g, quant="F16", prompt=0, gen=1, context=0, batch=4)   # MMF's tensor-core tiles
    assert next(s.unit for s in build_journey(p, "decode").stages if s.label == "QKV projection") == \
        "tensor cores (FP16)"
    assert unit(g, "F16", 512) == "tensor cores (FP16)"
    assert unit(g, "Q4_K_M", 0, "attention RMSNorm") == "CUDA cores"
