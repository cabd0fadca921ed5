"""ggml-sycl's multi-token mul_mat_id loops over the touched experts on the host, and its quantized prompt matmuls
write the weights out as F16 before the oneDNN GEMM (engines/moe_dispatch.py, from ggml-sycl.cpp
``ggml_sycl_mul_mat_id`` and ``ggml_sycl_op_mul_mat_sycl``). The figures below are worked out by hand from those
definitions and the model's shape."""

import math
from dataclasses import replace

import pytest

from tokspeed.engines.moe_dispatch import EXPERT_LOOP_CALL_KERNELS, expert_loop_kernels
from tokspeed.engines.profile import get_engine
from tokspeed.engines.weight_copy import F16_BYTES, F32_BYTES, dequant_bytes
from tokspeed.ledger import Role, forward_ops
from tokspeed.quant.schemes import scheme_for
from tokspeed.resolve import resolve_model


def _routed(ops):
    return [op for op in ops if op.experts_touched]


def test_the_kernel_constants_are_the_sources():
    sycl = get_engine("llama.cpp-sycl")
    # to_fp16(src0), to_fp16(src1), the GEMM per expert; ids to host + wait, row map, gather, scatter per call
    assert sycl.expert_loop_kernels == 3 and sycl.expert_loop == "multi-token" and EXPERT_LOOP_CALL_KERNELS == 5
    assert sycl.copies_weights_for_gemm and F16_BYTES == 2
    for other in ("llama.cpp-cuda", "llama.cpp-vulkan", "llama.cpp-metal"):
        assert not get_engine(other).expert_loop_kernels and not get_engine(other).copies_weights_for_gemm
    assert not get_engine("llama.cpp-rocm").copies_weights_for_gemm      # MMQ: no F16 copy (its loop: float experts)


def test_expert_loop_launches_by_hand():
    spec = resolve_model("qwen3-30b-a3b")[0]          # 128 experts, top-8, 48 MoE layers, d 2048, expert d_ff 768
    assert (spec.n_experts, spec.n_active_experts, spec.n_moe_layers) == (128, 8, 48)
    sycl = get_engine("llama.cpp-sycl")
    ops = _routed(forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 512, 0))
    assert len(ops) == 3                              # gate, up, down: one mul_mat_id each
    touched = 128 * (1 - (1 - 8 / 128) ** 512)        # every expert, to 1e-14
    assert math.isclose(ops[0].experts_touched, touched) and touched > 127.999
    # (3 x 128 + 5) launches per call x 48 layers x 3 calls = 56,016
    total = sum(expert_loop_kernels(sycl, op, 512) for op in ops)
    assert math.isclose(total, (3 * touched + 5) * 48 * 3) and round(total) == 56016
    one = _routed(forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 1, 0))
    assert sum(expert_loop_kernels(sycl, op, 1) for op in one) == 0          # one token: the fused MMVQ kernel
    assert sum(expert_loop_kernels(get_engine("llama.cpp-vulkan"), op, 512) for op in ops) == 0


def test_f16_copy_bytes_by_hand():
    spec = resolve_model("qwen3-30b-a3b")[0]
    sycl = get_engine("llama.cpp-sycl")
    gate = next(op for op in _routed(forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 512, 0))
                if op.name.startswith("ffn_gate_exps"))
    # every touched expert's gate matrix (768 x 2048) in 48 layers, written as F16 and read back: 4 B a weight
    weights = 128 * (1 - (1 - 8 / 128) ** 512) * 768 * 2048 * 48
    assert math.isclose(dequant_bytes(sycl, gate, "Q4_K_M", 512), 4 * weights, rel_tol=1e-9)
    assert math.isclose(4 * weights, 38_654_705_664, rel_tol=1e-9)
    assert dequant_bytes(sycl, gate, "F16", 512) == 0                # F16 weights: the GEMM reads them as they are
    assert dequant_bytes(sycl, gate, "Q4_K_M", 8) == 0                  # 8 tokens: the matrix-vector kernels
    router = next(op for op in forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 512, 0) if op.role is Role.ROUTER)
    assert dequant_bytes(sycl, router, "Q4_K_M", 512) == 0
    head = next(op for op in forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 512, 0) if op.role is Role.LM_HEAD)
    assert dequant_bytes(sycl, head, "Q4_K_M", 512) == 0                # one row: the last position's logits
    dense = resolve_model("llama-2-7b")[0]
    q = next(op for op in forward_ops(dense, scheme_for("Q4_0", dense), 2.0, 1, 512, 0) if op.name.startswith("attn_q"))
    assert math.isclose(dequant_bytes(sycl, q, "Q4_0", 512), 4 * 4096 * 4096 * 32, rel_tol=1e-9)   # 2.15 GB


# Llama 3.1 8B's matmul weights by hand (its config.json: d 4096, 32 layers, 8 KV heads of 128, d_ff 14,336, vocab
# 128,256, untied): per layer q 4096^2 + k, v 4096 x 1024 each + o 4096^2 + gate/up/down 3 x 4096 x 14,336 =
# 218,103,808, x 32 = 6,979,321,856, + the LM head 4096 x 128,256 = 525,336,576: 7,504,658,432 weights
LLAMA31_8B_MATMUL_WEIGHTS = 7_504_658_432


def test_bf16_weights_take_the_f32_branch_in_every_pass():
    from tokspeed.engines.backends import bf16_as_f32
    from tokspeed.hardware.catalog import get_hardware

    spec = resolve_model("llama-3.1-8b")[0]
    sycl = get_engine("llama.cpp-sycl")
    b70 = get_hardware("arc-pro-b70")
    # ggml_sycl_mul_mat: BF16 has no DMMV / MMVQ / MMQ kernel and is neither F16 nor quantized, so a decode step and
    # a prompt both convert the weights to F32 (read 2 B, write 4 B) and run an SGEMM over the copy (read 4 B)
    assert bf16_as_f32("llama.cpp-sycl", b70, "BF16", 1) and bf16_as_f32("llama.cpp-sycl", b70, "BF16", 512)
    assert not bf16_as_f32("llama.cpp-sycl", b70, "F16", 512) and not bf16_as_f32("llama.cpp-sycl", b70, "Q4_0", 512)
    for tokens in (1, 512):
        ops = forward_ops(spec, scheme_for("BF16", spec), 2.0, 1, tokens, 0)
        extra = sum(dequant_bytes(sycl, op, "BF16", tokens) for op in ops)
        # beyond the ledger's 2 B read: 2 x 4 B per weight, the LM head's included: 60,037,267,456 B
        assert extra == 2 * F32_BYTES * LLAMA31_8B_MATMUL_WEIGHTS == 60_037_267_456
        assert sum(dequant_bytes(sycl, op, "F16", tokens) for op in ops) == 0
        assert sum(dequant_bytes(get_engine("llama.cpp-rocm"), op, "BF16", tokens) for op in ops) == 0


def test_a_bf16_decode_step_on_sycl_pays_the_copy():
    from tokspeed.engines.rates import matmul_rate
    from tokspeed.engines.rates_stream import stream_bytes_s
    from tokspeed.hardware.catalog import get_hardware
    from tokspeed.timing import pass_time

    spec = resolve_model("llama-3.1-8b")[0]
    b70 = get_hardware("arc-pro-b70")
    sycl = get_engine("llama.cpp-sycl")
    plain = replace(sycl, copies_weights_for_gemm=False)
    ops = forward_ops(spec, scheme_for("BF16", spec), 2.0, 1, 1, 0)
    added = pass_time(ops, b70, sycl, "BF16", 1).seconds - pass_time(ops, b70, plain, "BF16", 1).seconds
    # 60.04 GB more through the B70's memory: at 608 GB/s x eta_mem, ~0.1 s a token: a 5x slower step
    assert math.isclose(added, 2 * F32_BYTES * LLAMA31_8B_MATMUL_WEIGHTS / stream_bytes_s(sycl, b70), rel_tol=1e-9)
    assert added > 4 * LLAMA31_8B_MATMUL_WEIGHTS * 2 / (608e9 * 1.05)
    # a prompt's SGEMM runs at the FP32 figure (19.66 TFLOPS on the B70), not XMX's 157.29, at its own factor
    rate = matmul_rate(b70, sycl, "BF16", 512)
    assert rate.listed == "FP32" and rate.peak == 19.66e12
    base = replace(sycl, eta_compute_format={k: v for k, v in sycl.eta_compute_format.items() if k != "f32-gemm"})
    own = replace(base, eta_compute_format={**base.eta_compute_format, "f32-gemm": 3.0})
    assert math.isclose(matmul_rate(b70, own, "BF16", 512).eta, min(3.0 * matmul_rate(b70, base, "BF16", 512).eta, 1.0))
    assert matmul_rate(b70, own, "F16", 512).eta == matmul_rate(b70, base, "F16", 512).eta


def test_the_loop_adds_its_launches_and_copy_to_the_pass():
    from tokspeed.hardware.catalog import get_hardware
    from tokspeed.timing import pass_time

    spec = resolve_model("qwen3-30b-a3b")[0]
    hw = get_hardware("arc-pro-b70")
    sycl = get_engine("llama.cpp-sycl")
    plain = replace(sycl, expert_loop_kernels=0.0, copies_weights_for_gemm=False)
    ops = forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 512, 0)
    with_loop, without = pass_time(ops, hw, sycl, "Q4_K_M", 512), pass_time(ops, hw, plain, "Q4_K_M", 512)
    from tokspeed.engines.rates_stream import stream_bytes_s
    f16 = sum(dequant_bytes(sycl, op, "Q4_K_M", 512) for op in ops) / stream_bytes_s(sycl, hw)
    launches = sum(expert_loop_kernels(sycl, op, 512) for op in ops) * sycl.launch_s
    assert math.isclose(with_loop.seconds - without.seconds, f16 + launches, rel_tol=1e-9)


def test_fast_evaluator_equals_predict_on_sycl_rows():
    np = pytest.importorskip("numpy")
    from tokspeed.calibration import load_rows
    from tokspeed.calibration.evaluate import predicted_tok_s
    from tokspeed.calibration.fast import build, predict_rows

    rows = [r for r in load_rows() if not r.skip and r.engine == "llama.cpp-sycl" and r.n_devices == 1]
    assert any(r.kind == "prefill" and resolve_model(r.model)[0].n_moe_layers for r in rows)
    profs = {r.era: get_engine("llama.cpp-sycl", version=r.era or None) for r in rows}
    fast = predict_rows(build(rows), profs)
    slow = np.array([predicted_tok_s(r, profs[r.era]) for r in rows])   # one profile for both (no pooling by device)
    pre = np.array([r.kind == "prefill" for r in rows])
    assert np.allclose(fast[pre], slow[pre], rtol=1e-9)
    # decode: the loop and the copy do not apply (one token); a 1.2e-8 gap on hybrid-attention rows predates them
    assert np.allclose(fast[~pre], slow[~pre], rtol=1e-6)   # decode steps sampled (33, trapezoid) vs summed in closed form: see test_calibration_fit


def test_a_routed_experts_gemm_ramps_over_its_own_tokens():
    from tokspeed.engines.rates import matmul_eff

    # ggml-sycl runs one GEMM per expert (expert_tile "own"): the ramp T / (T + half) takes T = the tokens routed to
    # the expert; the tile-sharing kernels of ggml-cuda and ggml-vulkan: tests/test_expert_tiles.py
    for name in ("llama.cpp-sycl",):
        eng = replace(get_engine(name), gemm_half_tokens=32.0)
        assert eng.expert_tile == "own"
        assert math.isclose(matmul_eff(eng, 512, 32.0), 32 / 64)        # top-8 of 128 experts, 512 tokens: 32 each
        assert math.isclose(matmul_eff(eng, 512), 512 / 544)              # a dense matmul: the pass's tokens
        assert matmul_eff(eng, 8, 4.0) == eng.eta_matvec                  # matrix-vector pass: unchanged
    spec = resolve_model("qwen3-30b-a3b")[0]
    gate = _routed(forward_ops(spec, scheme_for("Q4_K_M", spec), 2.0, 1, 512, 0))[0]
    assert math.isclose(gate.pairs_per_expert, 512 * 8 / (128 * (1 - (1 - 8 / 128) ** 512)))   # 32.0


def test_explain_counts_the_loop_and_the_copy():
    import tokspeed
    from tokspeed.explain.journey import build_journey

    p = tokspeed.predict("qwen3-30b-a3b", "arc-pro-b70", quant="Q4_K_M", engine="llama.cpp-sycl", prompt=512, gen=1)
    stages = {st.key: st for st in build_journey(p, "prefill").stages}
    experts = next(st for st in stages.values() if "experts gate/up/down" in st.label)
    # (3 x 128 + 5) launches per mul_mat_id (rounded expected count), 3 per layer, 48 layers
    assert "389 launches per layer" in experts.note
    assert experts.kernels - 3 * 48 == 3 * 389 * 48                   # beside the ledger's own launch per layer
    assert "16-bit floats" in experts.note and experts.act_bytes > 4 * 128 * 768 * 2048 * 48 * 3 * 0.999


def test_rocm_loops_over_float_experts_mmf_declines():
    # ggml_cuda_mul_mat_id (HIP build): float experts past the matrix-vector kernels (8 tokens) go to MMF unless
    # mmf.cu declines the shape (<= 1,024 output rows: above 512 tokens; more rows: above 128), then to the host loop
    spec = resolve_model("qwen3-coder-30b-a3b")[0]
    assert (spec.n_experts, spec.d_ff_expert, spec.d_model, spec.n_moe_layers) == (128, 768, 2048, 48)
    rocm = get_engine("llama.cpp-rocm")
    assert rocm.expert_loop == "float-no-mmf" and rocm.expert_loop_kernels == 3

    def loop(quant, tokens):
        ops = _routed(forward_ops(spec, scheme_for(quant, spec), 2.0, 1, tokens, 0))
        return {op.name.split()[0]: expert_loop_kernels(rocm, op, tokens, quant not in ("BF16", "F16")) for op in ops}

    at512 = loop("BF16", 512)
    # gate/up: 768 rows, 512 tokens is not above 512 -> MMF; down: 2,048 rows, above 128 tokens -> the loop
    assert at512["ffn_gate_exps"] == at512["ffn_up_exps"] == 0
    touched = 128 * (1 - (1 - 8 / 128) ** 512)
    assert math.isclose(at512["ffn_down_exps"], (3 * touched + 5) * 48) and round(at512["ffn_down_exps"]) == 18672
    assert sum(loop("BF16", 128).values()) == 0                       # 128 tokens: MMF takes every shape
    assert sum(loop("Q4_K_M", 512).values()) == 0                     # quantized experts: MMQ, one launch
    assert sum(expert_loop_kernels(get_engine("llama.cpp-cuda"), op, 512, False)
               for op in _routed(forward_ops(spec, scheme_for("BF16", spec), 2.0, 1, 512, 0))) == 0
