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
