"""llama.cpp's layer split pipelines a prompt's micro-batches over the devices (llama-context.cpp
``pipeline_parallel``, ggml_backend_sched's GGML_SCHED_MAX_COPIES = 4 in flight): with S equal stages and m micro-batches
in one llama_decode call (n_batch 2048 / n_ubatch 512 = 4), the call takes (m + S - 1) stage times, not m x S."""

import pytest

from tokspeed.predict import predict


def _prefill(gpus, prompt, version=None):
    return predict("llama-3-8b", "rtx-4090", quant="F16", engine="llama.cpp-cuda", engine_version=version,
                   prompt=prompt, gen=1, gpus=gpus, parallel="split" if gpus > 1 else None).prefill.tok_s


def test_four_micro_batches_over_four_gpus_take_seven_stage_times():
    m, s = 2048 // 512, 4
    assert _prefill(4, 2048) / _prefill(1, 2048) == pytest.approx(m * s / (m + s - 1), rel=0.1)   # 16/7 = 2.29


def test_one_micro_batch_does_not_pipeline():
    assert _prefill(4, 512) / _prefill(1, 512) == pytest.approx(1.0, rel=0.05)


def test_each_call_refills_the_pipeline():
    # 8192 tokens = 4 calls of 4 micro-batches: the same 16/7 per call (2 GPUs: 8/5)
    assert _prefill(2, 8192) / _prefill(1, 8192) == pytest.approx(2 * 4 / (4 + 2 - 1), rel=0.1)


def test_the_2023_row_split_era_does_not_pipeline():
    assert _prefill(4, 2048, "2023") / _prefill(1, 2048, "2023") == pytest.approx(1.0, rel=0.05)


# Vulkan and ROCm hand a hidden state between devices through host memory, blocking (ggml-backend.cpp
# ggml_backend_sched_compute_splits falls back to a synchronous ggml_backend_tensor_copy when cpy_tensor_async
# declines: ggml-vulkan refuses copies across devices; HIP without peer access stages through the host): no pipelining.

def _amd(engine, gpus, prompt=2048, gen=1):
    return predict("llama-3-8b", "radeon-ai-pro-r9700", quant="F16", engine=engine, prompt=prompt, gen=gen,
                   gpus=gpus, parallel="split" if gpus > 1 else None)


@pytest.mark.parametrize("engine", ["llama.cpp-vulkan", "llama.cpp-rocm"])
def test_host_staged_copies_do_not_pipeline_the_prompt(engine):
    # CUDA's 2 GPUs at 2048 tokens: 8/5 = 1.6x one GPU; here the stages take each micro-batch in turn: 1x
    assert _amd(engine, 2).prefill.tok_s / _amd(engine, 1).prefill.tok_s == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("engine", ["llama.cpp-vulkan", "llama.cpp-rocm"])
def test_a_host_staged_hand_off_crosses_the_host_link_twice(engine):
    from tokspeed.hardware import get_hardware
    from tokspeed.scale.interconnect import SYNC_LATENCY_S

    hw = get_hardware("radeon-ai-pro-r9700")
    # one token's hidden state, 4096 values x 4 bytes (F32), to the host and back, each copy a blocking sync
    one_copy = 4096 * 4 / (hw.host_link_gbps * 1e9) + SYNC_LATENCY_S["peer-copy"]
    extra_ms = _amd(engine, 2, prompt=0).decode.ms_per_token - _amd(engine, 1, prompt=0).decode.ms_per_token
    assert extra_ms == pytest.approx(2 * one_copy * 1e3, rel=0.05)


def test_the_parallel_section_says_how_stages_hand_off():
    amd = _amd("llama.cpp-vulkan", 2).extra["parallel"]
    assert amd["handoff_via_host"] is True and amd["prompt_pipelined"] is False
    cuda = predict("llama-3-8b", "rtx-4090", quant="F16", engine="llama.cpp-cuda", prompt=2048, gen=1, gpus=2,
                   parallel="split").extra["parallel"]
    assert cuda["handoff_via_host"] is False and cuda["prompt_pipelined"] is True
