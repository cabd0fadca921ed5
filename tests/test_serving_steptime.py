"""Step times of the serving simulation come from predict's timing path (tokspeed.serving.steptime)."""

import pytest

from scale_models import LLAMA3_8B
from tokspeed.ledger import forward_ops
from tokspeed.predict import predict
from tokspeed.serving.run import Load, Setup, evaluate
from tokspeed.serving.steptime import chunk_pairs, grid_below
from tokspeed.serving.worker import Parallelism, build_worker, resolve_group
from tokspeed.serving.schedulers import scheduler_for


def _worker(tp=1):
    r = resolve_group(LLAMA3_8B, "h100-sxm", "vllm", "F16", "f16", tp, 1)
    return r, build_worker(r, Parallelism(tp=tp), scheduler_for("vllm"), {"gpu_scale": 1.0, "step_s": 0.0}, 2048)


@pytest.mark.parametrize("b,depth", [(1, 1024), (16, 2000), (64, 4096)])
def test_decode_step_equals_predicts_pass(b, depth):
    # a decode-only step is the timer's pass over forward_ops(b, 1, depth): the split into depth-free ops
    # and an affine attention part adds up to it (b <= 64 are exact grid points)
    r, w = _worker()
    want = r.timer(forward_ops(r.spec, r.storage, r.kv_elem_bytes, b, 1, depth), r.profile, b, 1).seconds
    assert w.cost.step(b, 0, b * depth, 0) == pytest.approx(want, rel=1e-6)


def test_prefill_step_equals_a_prompt_pass():
    r, w = _worker()
    c = 2048
    want = r.timer(forward_ops(r.spec, r.storage, r.kv_elem_bytes, 1, c, 0), r.profile, 1, c).seconds
    assert w.cost.step(0, c, 0, chunk_pairs(c, 0)) == pytest.approx(want, rel=1e-3)


def test_decode_step_matches_predict_decode_ms():
    # predict's decode ms per token at batch 8 over prompt 1000 + 100 generated is the mean step over
    # depths 1000..1099; the serving step at the mean depth (KV affine in depth) gives the same
    p = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=1000, gen=100, batch=8)
    _, w = _worker()
    assert w.cost.step(8, 0, 8 * 1049.5, 0) * 1e3 == pytest.approx(p.decode.ms_per_token, rel=1e-3)


def test_grid_interpolates_between_points():
    assert grid_below(64) == (64, 64)
    lo, hi = grid_below(100)
    assert lo < 100 < hi and hi / lo < 2 ** (1 / 16) * 1.05


def test_kv_pool_by_hand():
    # H100 SXM 80 GB x 0.9 (vLLM gpu_memory_utilization) - weights - workspace - runtime, over Llama-3-8B's
    # 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 131072 bytes per token
    r, w = _worker()
    from tokspeed.memory import activation_bytes
    free = 0.9 * r.hw.usable_bytes - r.weights_bytes - activation_bytes(r.spec, 1, 512) - 2**30
    assert w.kv_tokens == pytest.approx(free / 131072, rel=1e-9)


def test_more_load_more_throughput_less_per_user():
    s = Setup(LLAMA3_8B, "h100-sxm", "vllm", quant="F16", isl=512, osl=128)
    lo = evaluate(s, Parallelism(), 1, Load("concurrency", concurrency=4))
    hi = evaluate(s, Parallelism(), 1, Load("concurrency", concurrency=64))
    assert hi["output_tok_s"] > 4 * lo["output_tok_s"]
    assert hi["tok_s_per_user"] < lo["tok_s_per_user"]


def test_link_scale_adds_the_pass_link_time():
    # TP2: a decode step's all-reduces take link_s in predict's layout pass; link_scale 2 takes them twice
    r = resolve_group(LLAMA3_8B, "h100-sxm", "vllm", "F16", "f16", 2, 1)
    sched = scheduler_for("vllm")
    one = build_worker(r, Parallelism(tp=2), sched, {"link_scale": 1.0}, 2048).cost
    two = build_worker(r, Parallelism(tp=2), sched, {"link_scale": 2.0}, 2048).cost
    pt = r.timer(forward_ops(r.spec, r.storage, r.kv_elem_bytes, 8, 1, 1024), r.profile, 8, 1)
    assert pt.link_s > 0
    assert two.step(8, 0, 8 * 1024, 0) - one.step(8, 0, 8 * 1024, 0) == pytest.approx(pt.link_s, rel=1e-6)


def test_fp8_checkpoints_run_fp8_gemms_in_server_engines():
    from tokspeed.serving.worker import gemm_hardware

    assert gemm_hardware("h100-sxm", "FP8", "vllm").fp16_tflops == 1979       # H100 SXM dense FP8
    assert gemm_hardware("h100-sxm", "F16", "vllm").fp16_tflops == 989
    assert gemm_hardware("a100-80g-sxm", "FP8", "vllm").fp16_tflops == 312    # Ampere: no FP8 units
    assert gemm_hardware("h100-sxm", "FP8", "llama.cpp").fp16_tflops == 989
