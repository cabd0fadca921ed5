"""llama.cpp's CPU attention with and without -fa (priors.toml [CPUATTN], engines/cpu_kernels.py attention_path).

Without -fa the graph materialises the F32 K.Q scores (llama-graph.cpp build_attn_mha; ggml-cpu ops.cpp
ggml_compute_forward_soft_max_f32) and a prompt's products run through tinyBLAS over F16 (llamafile_sgemm), one
token's through ggml_vec_dot_f16; with -fa ggml_compute_forward_flash_attn_ext_f16 keeps the scores in registers,
one query row at a time (one_chunk: a vec_dot_f16 and a vec_mad_f16 per key) or, in builds from FA_TILED_SINCE and
from 64 queries, in Q x KV tiles. Without F16 vector arithmetic (x86) the row kernels widen and narrow halves on the
FMA pipes (c conversions per FMA would leave 1 / (1 + c) of the FMA rate: 1/3 and 2/7), and pay per key a horizontal
sum and, with -fa, a serial online-softmax step: their shares of the FP32 FMA peak are measured
(benchmarks/bench_cpu_attention.py, RESULTS-cpu-prefill.md)."""

import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tokspeed.engines.cpu_kernels import attention_issue_share, attention_path
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import compute_rate
from tokspeed.explain.journey import build_journey
from tokspeed.hardware.catalog import get_hardware
from tokspeed.ledger import Op, Role, Scope
from tokspeed.predict import predict
from tokspeed.timing import op_time

# per score: K.Q written as F32 (4 B), soft_max reads and rewrites it (4 + 4 B), K.Q.V reads it (4 B) = 16 B;
# per score at head_dim 128: 2 x 128 FLOPs for K.Q, 2 x 128 for the value product, ~5 for the softmax
BYTES_PER_FLOP = 16 / (4 * 128 + 5)
EPYC = "AMD EPYC 9374F (32-core Zen 4 Genoa), 12ch DDR5-4800"      # 3.942 TFLOP/s FP32, AVX-512 without FP16
PI5 = "Raspberry Pi 5 (BCM2712, 16GB LPDDR4X-4267)"                # Cortex-A76: FP16 vector arithmetic
# measured on the project's 2-core AVX2 machine, sixteen readings per kernel over four runs (RESULTS-cpu-prefill.md):
# the one-token attention's 4 D FLOPs per key and query head over its time, of the FP32 FMA peak; the conversions
# alone (vec_dot_f16: 2 per FMA, one_chunk adds vec_mad_f16's 3) would allow 1/3 and 2/7
VEC_DOT_SHARE, FA_ROW_SHARE = 0.09, 0.050
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "RESULTS-cpu-prefill.md"


def test_the_unfused_score_traffic_is_derived_from_the_graph():
    off = get_engine("llama.cpp-cpu", flash_attention=False)
    on = get_engine("llama.cpp-cpu", flash_attention=True)
    assert math.isclose(off.attn_bytes_per_flop, BYTES_PER_FLOP, rel_tol=0.01)      # 0.031 in priors.toml
    assert on.attn_bytes_per_flop == 0.0
    assert off.kv_reread == on.kv_reread == 0.0     # a group's re-reads hit the caches on either path (ASSUMED)


@pytest.mark.parametrize("fa, tokens, month, path", [
    (False, 512, "", "gemm"), (False, 1, "", "vec_dot"), (False, 2, "", "gemm"),     # sgemm refuses n < 2
    (True, 512, "", "fa_tiled"), (True, 63, "", "fa_row"), (True, 1, "", "fa_row"),  # GGML_FA_TILE_Q = 64
    (True, 512, "2025-09", "fa_row"), (True, 512, "2026-03", "fa_tiled"),           # tiled: absent in 0.3.16
])
def test_which_kernel_runs_the_attention(fa, tokens, month, path):
    assert attention_path(get_engine("llama.cpp-cpu", flash_attention=fa), tokens, month) == path


def test_the_row_kernels_run_at_their_measured_share_on_x86_only():
    epyc, pi5 = get_hardware(EPYC), get_hardware(PI5)
    assert math.isclose(attention_issue_share(epyc, "vec_dot"), VEC_DOT_SHARE)
    assert math.isclose(attention_issue_share(epyc, "fa_row"), FA_ROW_SHARE)
    # below what the conversions alone allow: the per-key work is most of the kernel
    assert FA_ROW_SHARE < 2 / 7 / 4 and VEC_DOT_SHARE < 1 / 3 / 2
    assert attention_issue_share(epyc, "gemm") == attention_issue_share(epyc, "fa_tiled") == 1.0
    assert attention_issue_share(pi5, "fa_row") == attention_issue_share(pi5, "vec_dot") == 1.0


def test_attention_rates_by_hand_on_an_epyc():
    hw = get_hardware(EPYC)
    peak = 3.942e12               # catalog FP32 SIMD peak; eta_compute 1 on the CPU
    old = get_engine("llama.cpp-cpu", hw, version="2025-09", flash_attention=True)
    new = get_engine("llama.cpp-cpu", hw, version="2026-06", flash_attention=True)
    off = get_engine("llama.cpp-cpu", hw, version="2025-09", flash_attention=False)

    def rate(eng, tokens):
        return compute_rate(hw, eng, "Q8_0", tokens, "tensor", attn=True).value

    # a prompt on a build without the tiled kernel: the one-row kernel's measured share, below tinyBLAS' / the tiled 0.4
    assert math.isclose(rate(old, 512), peak * FA_ROW_SHARE, rel_tol=1e-9)
    assert math.isclose(rate(new, 512), peak * 0.4, rel_tol=1e-9)
    assert math.isclose(rate(off, 512), peak * 0.4, rel_tol=1e-9)
    # one token: vec_dot_f16 without -fa, the one-row kernel with it, whatever the build
    assert math.isclose(rate(off, 1), peak * VEC_DOT_SHARE, rel_tol=1e-9)
    assert math.isclose(rate(new, 1), peak * FA_ROW_SHARE, rel_tol=1e-9)
    # ik_llama.cpp runs its own attention: unchanged
    ik = get_engine("ik_llama.cpp-cpu", hw)
    assert math.isclose(rate(ik, 512), peak * 0.4, rel_tol=1e-9)


def test_the_shares_lie_among_the_recorded_readings():
    # the results file's section holds the last run's readings per kernel; the paragraph below it the runs before
    text = RESULTS.read_text()
    section, after = text.split("<!-- bench_cpu_attention:start -->")[1].split("<!-- bench_cpu_attention:end -->")
    for kernel, share in (("fa_row", FA_ROW_SHARE), ("vec_dot", VEC_DOT_SHARE)):
        row = rf"^\| [^|]+ \| {kernel} \(-fa [01]\) \|.*\| ([0-9.]+) \|$"
        last = [float(v) for v in re.findall(row, section, re.M)]
        before = re.search(rf"{kernel} ([0-9., and]+)", " ".join(after.split()))
        readings = last + [float(x) for x in re.findall(r"0\.[0-9]+", before[1])]
        assert len(readings) >= 8
        lo, hi = sorted(readings)[len(readings) // 4], sorted(readings)[-1 - len(readings) // 4]
        assert lo <= share <= hi, (kernel, readings)      # inside the middle half of what was measured


def test_fa_off_costs_the_score_traffic_where_memory_binds():
    # a Raspberry Pi 5's CPU at 1 GB/s: 1e9 attention FLOPs at 0.154 TFLOP/s x eta_attn 0.4 take 16 ms of
    # compute; the scores' 1e9 x 16 / 517 B take 44 ms at 0.7 x 1 GB/s, so -fa off is memory bound and -fa on is not
    hw = replace(get_hardware(PI5), bandwidth_gbps=1.0, cpu_bandwidth_gbps=0.0)
    op = Op("attention", Role.ATTN_CORE, Scope.DENSE, "tensor", 1, flops=1e9, kv_read_bytes=1.0)
    off = get_engine("llama.cpp-cpu", hw, flash_attention=False)
    on = get_engine("llama.cpp-cpu", hw, flash_attention=True)
    t_off, bound_off = op_time(op, hw, off, "F16", 512)
    t_on, bound_on = op_time(op, hw, on, "F16", 512)
    assert bound_off == "memory" and bound_on == "compute"
    # streamed at eta_mem 0.7 of 1 GB/s: the KV byte also at eta_kv 0.7, the scores at the stream's rate
    assert math.isclose(t_off, (1.0 / 0.7 + 1e9 * 0.031) / (0.7 * 1e9), rel_tol=1e-6)
    assert math.isclose(t_on, 1e9 / (0.154e12 * 0.4), rel_tol=1e-6)


def test_a_server_cpu_hides_the_scores_under_its_compute():
    # EPYC 9374F, today's build: 3.94 TFLOP/s x 0.4 = 1.58 TFLOP/s of attention and 460.8 GB/s: per FLOP 0.63 ps of
    # compute against 0.031 / (0.7 x 460.8e9) = 0.096 ps of score traffic -- a prompt predicts alike with -fa on/off
    hw = get_hardware(EPYC)
    op = Op("attention", Role.ATTN_CORE, Scope.DENSE, "tensor", 1, flops=1e12, kv_read_bytes=1.0)
    t_off, _ = op_time(op, hw, get_engine("llama.cpp-cpu", hw, flash_attention=False), "F16", 512)
    t_on, _ = op_time(op, hw, get_engine("llama.cpp-cpu", hw, flash_attention=True), "F16", 512)
    assert t_off == t_on == pytest.approx(1e12 / (3.942e12 * 0.4), rel=1e-9)


def test_explain_names_the_row_kernel_and_its_measured_share():
    def note(hw, **kw):
        p = predict("llama-3.1-8b", hw, quant="Q4_K_M", engine="llama.cpp-cpu", context=8192, **kw)
        return next(st.note for st in build_journey(p).stages if st.label == "attention over the KV cache")

    assert "one-row FlashAttention kernel at 0.05 of the FP32 peak" in note(EPYC)
    assert "vec_dot_f16 per score (-fa off) at 0.09" in note(EPYC, flash_attention=False)
    assert "of the FP32 peak" not in note(PI5)          # Arm: not measured, no share to name
