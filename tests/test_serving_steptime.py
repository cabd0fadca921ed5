"""Step times of the serving simulation come from predict's timing path (tokspeed.serving.steptime)."""

import pytest

from scale_models import LLAMA3_8B
from tokspeed.ledger import forward_ops
from tokspeed.predict import predict
from tokspeed.serving.run import Load, evaluate
from tokspeed.serving.steptime import chunk_pairs, grid_below
from tokspeed.serving.worker import Parallelism, build_worker, resolve_group
from tokspeed.serving.schedulers import scheduler_for
from tokspeed.serving.fitted import fitted_for
from tokspeed.serving_api import make_setup
from tokspeed.prediction_setup import resolve

H100_BYTES = 80 * 2**30        # an H100 SXM "80 GB": 80 GiB of HBM3 (nvidia-smi: 81,559 MiB of 81,920)


def _worker(tp=1):
    r = resolve_group(resolve, LLAMA3_8B, "h100-sxm", "vllm", "F16", "f16", tp, 1)
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
    # (predict applies the engine's fitted serving constants, as serve does: the worker takes them too)
    p = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=1000, gen=100, batch=8)
    r, _ = _worker()
    w = build_worker(r, Parallelism(), scheduler_for("vllm"), fitted_for("vllm", r.hw.vendor), 2048)
    assert w.cost.step(8, 0, 8 * 1049.5, 0) * 1e3 == pytest.approx(p.decode.ms_per_token, rel=1e-3)


def test_grid_interpolates_between_points():
    assert grid_below(64) == (64, 64)
    lo, hi = grid_below(100)
    assert lo < 100 < hi and hi / lo < 2 ** (1 / 16) * 1.05


def test_kv_pool_by_hand():
    # H100 SXM 80 GB (80 GiB) x 0.9 (vLLM gpu_memory_utilization) - weights - workspace - runtime, over Llama-3-8B's
    # 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 131072 bytes per token
    r, w = _worker()
    from tokspeed.memory import activation_bytes
    free = 0.9 * H100_BYTES - r.weights_bytes - activation_bytes(r.spec, 1, 512) - 2**30
    assert w.kv_tokens == pytest.approx(free / 131072, rel=1e-9)


def test_more_load_more_throughput_less_per_user():
    s = make_setup(LLAMA3_8B, "h100-sxm", "vllm", quant="F16", isl=512, osl=128)
    lo = evaluate(s, Parallelism(), 1, Load("concurrency", concurrency=4))
    hi = evaluate(s, Parallelism(), 1, Load("concurrency", concurrency=64))
    assert hi.output_tok_s > 4 * lo.output_tok_s
    assert hi.tok_s_per_user < lo.tok_s_per_user


def test_link_scale_adds_the_pass_link_time():
    # TP2: a decode step's all-reduces take link_s in predict's layout pass; link_scale 2 takes them twice
    r = resolve_group(resolve, LLAMA3_8B, "h100-sxm", "vllm", "F16", "f16", 2, 1)
    sched = scheduler_for("vllm")
    one = build_worker(r, Parallelism(tp=2), sched, {"link_scale": 1.0}, 2048).cost
    two = build_worker(r, Parallelism(tp=2), sched, {"link_scale": 2.0}, 2048).cost
    pt = r.timer(forward_ops(r.spec, r.storage, r.kv_elem_bytes, 8, 1, 1024), r.profile, 8, 1)
    assert pt.link_s > 0
    assert two.step(8, 0, 8 * 1024, 0) - one.step(8, 0, 8 * 1024, 0) == pytest.approx(pt.link_s, rel=1e-6)


def test_fp8_checkpoints_run_fp8_gemms_in_server_engines():
    from tokspeed.serving.gemm_device import gemm_hardware

    assert gemm_hardware("h100-sxm", "FP8", "vllm").fp16_tflops == 1979       # H100 SXM dense FP8
    assert gemm_hardware("h100-sxm", "F16", "vllm").fp16_tflops == 989
    assert gemm_hardware("a100-80g-sxm", "FP8", "vllm").fp16_tflops == 312    # Ampere: no FP8 units
    assert gemm_hardware("h100-sxm", "FP8", "llama.cpp").fp16_tflops == 989


def _bytes_cost(model):
    """A StepCost whose 'time' of a pass is its KV bytes read / 1e12 (and FLOPs / 1e18: kept apart)."""
    from tokspeed.models.catalog import get_model
    from tokspeed.quant.schemes import scheme_for
    from tokspeed.serving.steptime import StepCost

    spec = get_model(model)

    def time_ops(ops, batch, n):
        return sum(o.kv_read_bytes for o in ops) / 1e12 + sum(o.flops for o in ops) / 1e18

    return spec, StepCost(spec, scheme_for("F16", spec), 2.0, time_ops)


@pytest.mark.parametrize("depth", [2_000, 10_000])
def test_sliding_layer_reads_at_most_its_window(depth):
    # Gemma 2 27B: 46 layers, 23 of them sliding over 4,096 tokens; 16 KV heads x 128 x 2 (K, V) x 2 bytes =
    # 8,192 bytes per token and layer. 4 rows at depth d read (d + the new token) on the 23 full layers and
    # (min(d, 4,096) + 1) on the 23 sliding ones, not d + 1 on all 46; 32 query heads score as many keys
    spec, cost = _bytes_cost("gemma-2-27b")
    keys = 23 * (depth + 1) + 23 * (min(depth, 4096) + 1)
    want = 4 * keys * 8192 / 1e12 + 4 * 32 * keys * (2 * 128 + 2 * 128 + 5) / 1e18
    assert cost.attn_decode(4, 4 * depth) == pytest.approx(want, rel=1e-9)


def test_chunked_layer_reads_its_chunk():
    # Llama 4 Maverick: 36 of 48 layers attend within 8,192-token chunks; two rows over 40,000 cached tokens are past
    # their first chunk, each anywhere in its current one: 8,192 / 2 = 4,096 keys on average (+ the new token's);
    # one row at depth 20,000 is 20,000 - 2 x 8,192 = 3,616 tokens into its chunk.
    # 8 KV heads x 128 x 2 x 2 bytes = 4,096 bytes a token and layer
    spec, cost = _bytes_cost("llama-4-maverick")
    per_key = 4096 / 1e12 + 40 * (2 * 128 + 2 * 128 + 5) / 1e18
    assert cost.attn_decode(1, 20_000) == pytest.approx((12 * 20_001 + 36 * 3_617) * per_key, rel=1e-9)
    keys = 12 * 20_001 + 36 * 4_097
    want = 2 * keys * 4096 / 1e12 + 2 * 40 * keys * (2 * 128 + 2 * 128 + 5) / 1e18
    assert cost.attn_decode(2, 2 * 20_000) == pytest.approx(want, rel=1e-9)


def test_sliding_layer_prefill_pairs_by_hand():
    # a 512-token prompt chunk from position 0 on a 128-token window: query i attends min(i + 1, 128) keys,
    # 128 x 129 / 2 + (512 - 128) x 128 = 57,408 pairs on a sliding layer; 512 x 513 / 2 = 131,328 on a full one
    spec, cost = _bytes_cost("gpt-oss-20b")
    assert cost.prefill_pairs([(512, 0)]) == (131_328, 57_408)
    flops = 64 * 12 * (131_328 + 57_408) * (2 * 64 + 2 * 64 + 5) / 1e18
    kv = 12 * (512 + 512) * 2048 / 1e12        # a chunk reads its own keys (cached 0 + 512 new) on every layer
    assert cost.attn_prefill(512, cost.prefill_pairs([(512, 0)])) == pytest.approx(flops + kv, rel=1e-6)


def test_kv_pool_holds_a_sliding_layer_at_its_window():
    # Gemma 2 27B on an H100 (vLLM): a 10,000-token sequence keeps 10,000 tokens on its 23 full layers and
    # 4,096 on its 23 sliding ones (vLLM V1 frees blocks outside the window), 8,192 bytes a token and layer:
    # the pool's tokens are the free bytes over (23 x 10,000 + 23 x 4,096) x 8,192 / 10,000 a token
    from tokspeed.memory import activation_bytes

    r = resolve_group(resolve, "gemma-2-27b", "h100-sxm", "vllm", "F16", "f16", 1, 1)
    w = build_worker(r, Parallelism(), scheduler_for("vllm"), {}, 10_000)
    free = 0.9 * H100_BYTES - r.weights_bytes - activation_bytes(r.spec, 1, 512) - 2**30
    assert w.kv_tokens == pytest.approx(free / ((23 * 10_000 + 23 * 4096) * 8192 / 10_000), rel=1e-9)


def test_tensorrt_llm_pool_is_a_share_of_free_memory_at_full_attention():
    # TensorRT-LLM: kv_cache_free_gpu_mem_fraction 0.9 of the memory the weights, workspace and runtime leave
    # (not 0.9 of the device), and no sliding window unless max_attention_window_size is set: Mistral 7B v0.1
    # caches all 32 layers x 8 KV heads x 128 x 2 (K, V) x 1 byte (FP8) = 65,536 bytes a token at any length
    from tokspeed.memory import activation_bytes

    r = resolve_group(resolve, "mistral-7b", "h100-sxm", "tensorrt-llm", "FP8", "fp8", 1, 1)
    w = build_worker(r, Parallelism(), scheduler_for("tensorrt-llm"), {}, 22_000)
    rest = activation_bytes(r.spec, 1, 512) + r.profile.runtime_overhead_gib * 2**30
    assert w.kv_tokens == pytest.approx(0.9 * (H100_BYTES - r.weights_bytes - rest) / 65_536, rel=1e-9)
    assert resolve_group(resolve, "mistral-7b", "h100-sxm", "vllm", "FP8", "fp8", 1, 1).spec.sliding_window == 4096


def test_batch_max_takes_the_engines_window_and_pool():
    # predict --batch max on TensorRT-LLM sizes Mistral 7B v0.1 as the serving worker does: 65,536 bytes a token
    # at any length (no window), 0.9 of what the weights leave; 22,000-token sequences: pool // 22,000 of them
    from tokspeed.memory import activation_bytes
    from tokspeed.serving_api import max_batch

    r = resolve_group(resolve, "mistral-7b", "h100-sxm", "tensorrt-llm", "FP8", "fp8", 1, 1)
    rest = activation_bytes(r.spec, 1, 512) + r.profile.runtime_overhead_gib * 2**30
    pool = 0.9 * (H100_BYTES - r.weights_bytes - rest) / 65_536
    got = max_batch("mistral-7b", "h100-sxm", 22_000, quant="FP8", kv_dtype="fp8", engine="tensorrt-llm")
    assert got["kv_pool_tokens"] == pytest.approx(pool, rel=1e-9) and got["batch"] == int(pool // 22_000)


def test_sglang_overlap_scheduler_hides_the_host_step():
    # SGLang's overlap scheduler (disable_overlap_schedule = False by default) builds step N+1 on the CPU while
    # the GPU runs step N: a fitted 2 ms of host time per step is not paid there, but is by vLLM, and by SGLang
    # with pipeline parallelism (which turns the overlap off)
    fit = {"gpu_scale": 1.0, "step_s": 0.002}
    sg = resolve_group(resolve, LLAMA3_8B, "h100-sxm", "sglang", "F16", "f16", 1, 1)
    assert build_worker(sg, Parallelism(), scheduler_for("sglang"), fit, 2048).cost.step_s == 0.0
    _, vl = _worker()
    assert build_worker(vl.resolved, Parallelism(), scheduler_for("vllm"), fit, 2048).cost.step_s == 0.002
    sg2 = resolve_group(resolve, LLAMA3_8B, "h100-sxm", "sglang", "F16", "f16", 1, 2)
    assert build_worker(sg2, Parallelism(pp=2), scheduler_for("sglang"), fit, 2048).cost.step_s == 0.002
