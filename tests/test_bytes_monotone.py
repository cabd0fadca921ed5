"""Fewer bytes never slower, all else equal (issue 29): over formats x engines x devices x models, a format that
reads fewer bytes per token decodes at least as fast as one of the same kernel family (kernel_family: one base
type, only how many tensors are wider differs); under the ideal engine (the roofline) across every format."""

import itertools
import re

import pytest

import tokspeed
from tokspeed.engines.compat import supported_formats
from tokspeed.quant.format_key import format_group
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware

ENGINES = ["llama.cpp", "vllm", "sglang", "tensorrt-llm", "transformers", "gpt-fast", "exllamav2", "mlx", "ideal"]
DEVICES = ["rtx-4090", "rtx-3090", "h100-sxm", "a100-80g-sxm", "mi300x", "m4-max-40", "strix-halo", "ddr5-5600-2ch"]
MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-4b"]


def kernel_family(q: str) -> str:
    """The kernels a format runs: format_group and its base type. llama.cpp's ftypes of one base type (Q4_K_S,
    Q4_K_M, UD-Q4_K_XL) differ only in how many tensors take a wider type; across base types (Q2_K against Q3_K, the
    codebook IQ* and ternary TQ* types) the dequantisation is other core work per weight (ggml-cuda vecdotq.cuh), so
    where the kernel bound (cores x clock) binds, fewer bytes need not be faster (Q2_K on a Strix Halo decodes
    0.25 % slower than Q3_K_S). Block-scaled variants keep their base (FP8-BLOCK is FP8, INT4-G32 is INT4)."""
    up = re.sub(r"^UD-", "", q.strip().upper())
    m = re.match(r"^(I?Q\d_K|IQ\d|TQ\d|Q\d_\d)", up)
    return format_group(q) + ":" + (m.group(1) if m else up.split("-")[0])


def _runs(engine, device, model, context):
    try:
        formats = supported_formats(engine, get_hardware(device))
    except UserError:
        return []
    out = []
    for q in formats:
        try:
            p = tokspeed.predict(model, device, engine=engine, quant=q, prompt=0, gen=16, context=context)
        except UserError:
            continue            # a format this model or engine cannot take here
        out.append((q, p.decode.bytes_per_token, p.decode.tok_s))
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_fewer_bytes_never_slower(engine):
    # every device x model x context of the grid (not a random draw of it: a violation must not hide from one run
    # and show in the next)
    for device, model, context in itertools.product(DEVICES, MODELS, [0, 4096, 32768]):
        runs = _runs(engine, device, model, context)
        for (q1, b1, t1), (q2, b2, t2) in itertools.permutations(runs, 2):
            if b1 < b2 and (engine == "ideal" or kernel_family(q1) == kernel_family(q2)):
                assert t1 >= t2 * (1 - 1e-6), (engine, device, model, context, q1, q2, b1, b2, t1, t2)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_deepseek_v3_fp8_is_not_slower_than_f16_on_8_h200(engine):
    # FP8 reads half the bytes; the activation quantisation before its GEMMs is fused into the RMSNorm /
    # SiLU-and-mul kernels by vLLM's compile passes, leaving o_proj's and the fused-MoE kernel's inputs
    fp8 = tokspeed.predict("deepseek-v3", "h200-sxm", engine=engine, gpus=8, quant="FP8")
    f16 = tokspeed.predict("deepseek-v3", "h200-sxm", engine=engine, gpus=8, quant="F16")
    assert fp8.decode.bytes_per_token < 0.6 * f16.decode.bytes_per_token
    assert fp8.decode.ms_per_token < f16.decode.ms_per_token


def test_the_property_sees_many_formats():
    assert len(_runs("llama.cpp", "rtx-4090", "llama-3.1-8b", 0)) >= 10
    assert {q for q, _, _ in _runs("vllm", "h100-sxm", "llama-3.1-8b", 0)} >= {"BF16", "FP8", "AWQ-4B"}
