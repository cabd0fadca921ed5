"""The journey of one token: stages sum to the predicted time; bytes and times checked by hand."""

import pytest

from tokspeed.explain import explain
from tokspeed.hardware.catalog import hardware_from_flags

# Llama 3 8B (HF config): 32 layers, d_model 4096, 32 heads, 8 KV heads of 128, d_ff 14336, vocab 128256
L, D, KVD, FF, V = 32, 4096, 8 * 128, 14336, 128256
KV_PER_TOKEN = 2 * L * 8 * 128 * 2          # the seeds' 131,072 B (128 KiB) per context token, FP16


def one_tb_s():
    """The seeds' device: 1 TB/s, with compute to spare."""
    return hardware_from_flags("1000GB/s", "80GB", fp16_tflops=1000)


def stage(expl, key):
    return next(s for s in expl.journey.stages if s.key == key)


@pytest.mark.parametrize("hw", ["rtx-4090", "h100-sxm"])
@pytest.mark.parametrize("engine", ["ideal", "llama.cpp", "vllm"])
@pytest.mark.parametrize("context", [0, 4096])
def test_decode_stages_sum_to_predicted_step(hw, engine, context):
    e = explain("llama-3-8b", hw, context=context, engine=engine, with_levers=False)
    total = sum(s.seconds for s in e.journey.stages)
    assert total == pytest.approx(e.prediction.decode.ms_per_token / 1e3, rel=1e-12)
    assert sum(s.share for s in e.journey.stages) == pytest.approx(1.0)


@pytest.mark.parametrize("prefill", [1, 512, 1300])
def test_prefill_stages_sum_to_predicted_prefill(prefill):
    e = explain("llama-2-7b", "rtx-4090", prefill=prefill, context=100, with_levers=False)
    assert sum(s.seconds for s in e.journey.stages) == pytest.approx(e.prediction.prefill.seconds, rel=1e-12)
    assert e.journey.tokens == prefill


def test_stage_order_follows_the_seeds():
    keys = [s.key for s in explain("llama-3-8b", "rtx-4090", with_levers=False).journey.stages]
    order = ["tokenize", "launch", "embedding", "attn_norm", "qkv", "rope", "attention", "o_proj", "ffn_norm", "ffn",
             "final_norm", "lm_head", "sampling"]
    assert [k for k in keys if k in order] == order


def test_weight_bytes_by_hand():
    e = explain("llama-3-8b", one_tb_s(), engine="ideal", with_levers=False)
    assert stage(e, "qkv").weight_bytes == L * (D * D + 2 * KVD * D) * 2
    assert stage(e, "o_proj").weight_bytes == L * D * D * 2
    assert stage(e, "ffn").weight_bytes == L * 3 * D * FF * 2
    assert stage(e, "lm_head").weight_bytes == V * D * 2
    assert stage(e, "embedding").weight_bytes == D * 2          # one row, not the table


def test_ideal_decode_time_is_bytes_over_bandwidth():
    e = explain("llama-3-8b", one_tb_s(), engine="ideal", context=1024, with_levers=False)
    ffn = stage(e, "ffn")
    assert ffn.bound == "memory"
    assert ffn.seconds == pytest.approx(ffn.bytes / 1e12, rel=1e-9)
    att = stage(e, "attention")
    # one new token: reads 1024 cached + its own K/V, writes its K/V
    assert att.kv_bytes == KV_PER_TOKEN * (1024 + 1 + 1)
    # the seeds: ≈ 16 GB per token at 1 TB/s → ≈ 62 tok/s upper bound (we read one embedding row: ≈ 66)
    assert 60 < e.journey.tok_s < 68
    assert stage(e, "launch").seconds == 0 and stage(e, "sampling").seconds == 0


def test_cpu_stages_are_launch_count_and_fixed_cost():
    e = explain("llama-3-8b", "rtx-4090", engine="llama.cpp", with_levers=False)
    eng, j = e.prediction.engine_profile, e.journey
    assert eng.launch_s > 0 and eng.fixed_s > 0
    assert stage(e, "launch").seconds == pytest.approx(j.kernels * eng.launch_s)
    assert stage(e, "sampling").seconds == pytest.approx(eng.fixed_s)
    assert stage(e, "sampling").unit == "CPU" and stage(e, "launch").unit == "CPU"
    # at least one kernel per weight matrix: 7 matmuls per layer + LM head
    assert j.kernels >= 7 * L + 1


def test_decode_memory_bound_prefill_compute_bound():
    d = explain("llama-3-8b", "h100-sxm", quant="F16", with_levers=False)
    p = explain("llama-3-8b", "h100-sxm", quant="F16", prefill=2048, with_levers=False)
    ridge = 989e12 / 3350e9
    assert d.journey.ridge_flops_per_byte == pytest.approx(ridge)
    assert stage(d, "ffn").intensity < 2 < ridge and stage(d, "ffn").bound == "memory"
    # 512-token micro-batches: ≈ 2·512 FLOPs per 2-byte weight → intensity ≈ 500 > ridge ≈ 295
    assert stage(p, "ffn").intensity > ridge and stage(p, "ffn").bound == "compute"


def test_units_and_data_sources():
    e = explain("llama-3-8b", "rtx-4090", with_levers=False)
    # one token under llama.cpp CUDA: the matrix-vector kernels on the CUDA cores (MMVQ with DP4A for quantized
    # weights, ggml-cuda mmvq.cu), not the tensor cores; a prompt's on the tensor cores (INT8 under MMQ)
    quantized = e.prediction.quant != "F16"
    assert stage(e, "ffn").unit == ("CUDA cores (DP4A, MMVQ)" if quantized else "CUDA cores (matrix-vector)")
    assert stage(e, "attn_norm").unit == "CUDA cores"
    p = explain("llama-3-8b", "rtx-4090", prefill=512, with_levers=False)
    assert stage(p, "ffn").unit == ("INT8 tensor cores (MMQ)" if quantized else "tensor cores (FP16)")
    assert "VRAM" in stage(e, "ffn").data_from and "GDDR6X" in stage(e, "ffn").data_from
    assert "KV cache" in stage(e, "attention").data_from
    assert "PCIe" in stage(e, "sampling").data_from
    h = explain("llama-3-8b", "h100-sxm", with_levers=False)
    assert "HBM" in stage(h, "qkv").data_from


def test_every_catalog_model_sums():
    """MoE, MLA, sliding-window and tied models too: the stages always add up to the prediction."""
    from tokspeed.models.catalog import model_ids

    for mid in model_ids():
        e = explain(mid, "h100-sxm", context=2048, with_levers=False)
        assert e.journey.total_s == pytest.approx(e.prediction.decode.ms_per_token / 1e3, rel=1e-12), mid
        assert {"qkv", "lm_head", "sampling"} <= {s.key for s in e.journey.stages}, mid


def test_unified_memory_and_cpu_roles():
    mac = explain("llama-3-8b", "m2-ultra-76", with_levers=False)
    assert "unified memory" in stage(mac, "ffn").data_from
    assert "no copy" in stage(mac, "sampling").data_from                 # logits never cross a bus
    assert stage(mac, "launch").data_from == "Metal command buffer"
    cpu = explain("llama-3-8b", "ddr5-5600-2ch", quant="F16", with_levers=False)
    assert stage(cpu, "ffn").unit == "CPU cores (FP32 SIMD FMA, tinyBLAS)" and "system RAM" in stage(cpu, "ffn").data_from
    # the default llama.cpp file (Q4_K_M): ggml-cpu repacks Q4_K on AVX2 (repack.cpp q4_K_8x8), quantises the
    # activations to Q8_K and multiplies in int8 SIMD dot products (engines/cpu_kernels.py)
    assert stage(explain("llama-3-8b", "ddr5-5600-2ch", quant="Q4_K_M", with_levers=False), "ffn").unit == \
        "CPU cores (int8 vpmaddubsw + vpmaddwd, repacked GEMM)"
    assert "one table row" in stage(cpu, "embedding").data_from
