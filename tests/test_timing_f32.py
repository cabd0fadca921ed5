"""Matmuls over F32 weights run as FP32 GEMMs (cuBLAS SGEMM, torch without TF32, a CPU's FP32 SIMD), not
on FP16 tensor units: their peak is the device's FP32 figure."""

import pytest

import tokspeed
from tokspeed.hardware.spec import Hardware


def test_f32_prefill_runs_at_the_fp32_rate_on_a_gpu():
    # ideal engine: compute-bound prefill at the listed peaks, RTX 4090 FP16 (FP32 accumulate) 165.2 TF vs FP32
    # 82.6 TF: F32 weights take twice the FP16 compute time (their activations and attention run in F32 too);
    # memory-bound norms and activations keep theirs, so the ratio is a little under 2 (it was 1: both at 165.2)
    kw = dict(engine="ideal", prompt=512, gen=1)
    f16 = tokspeed.predict("llama-3.1-8b", "rtx-4090", quant="F16", **kw)
    f32 = tokspeed.predict("llama-3.1-8b", "rtx-4090", quant="F32", **kw)
    assert f16.prefill.bound == f32.prefill.bound == "compute"
    assert 0.92 * 165.2 / 82.6 < f16.prefill.tok_s / f32.prefill.tok_s <= 165.2 / 82.6


def test_a_cpu_whose_bf16_matmul_is_slow_still_decodes_f32_at_its_bandwidth():
    # `tokspeed probe` on a CPU without BF16 instructions measures bf16 matmuls at ~1 GFLOP/s (torch's
    # fallback) and FP32 at 126: an F32 model's decode must stay memory-bound at the measured 21.5 GB/s
    # (the README's main job measured 8.7 tok/s for qwen2.5-0.5b F32 on such a machine; this said 0.55)
    hw = Hardware(id="local", name="AMD EPYC (2 cores, measured)", kind="cpu", vendor="AMD", memory_gb=25,
                  bandwidth_gbps=21.51, fp16_tflops=0.0009, fp32_tflops=0.1265, source="measured by tokspeed probe")
    p = tokspeed.predict("qwen2.5-0.5b", hw, quant="F32", kv_dtype="f32", engine="gpt-fast", prompt=0, gen=1)
    assert p.decode.bound == "memory"
    ideal = 21.51e9 / p.decode.bytes_per_token
    assert 0.5 * ideal < p.decode.tok_s <= ideal
    # and at depth, attention over an F32 KV cache is F32 math too: it measured 6.4 tok/s at depth 2048 where
    # the FP16 rate made it 2.2
    deep = tokspeed.predict("qwen2.5-0.5b", hw, quant="F32", kv_dtype="f32", engine="gpt-fast", prompt=0, gen=1,
                            context=2048)
    assert deep.decode.tok_s > 0.6 * p.decode.tok_s
