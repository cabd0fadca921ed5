"""The weight format assumed when none is named (tokspeed.engines.default_format): released for server engines, the GGUF
people download for llama.cpp-family engines; the output says which was assumed."""

import json

import pytest

import tokspeed
from tokspeed.cli.main import main
from tokspeed.models.hf_config import spec_from_hf_config


def test_deepseek_v3_on_8_h200_with_vllm_fits_in_its_released_fp8():
    p = tokspeed.predict("deepseek-v3", "h200-sxm", engine="vllm", gpus=8)
    assert p.quant == "FP8" and "released" in p.quant_assumed
    # 671 B parameters at one byte (FP8 linear layers; the 2 x 129,280 x 7,168 embedding + LM head in BF16 add
    # 2 x 0.93 GB) against 8 x 141 GB: fits, where F16 (1.34 TB of weights) does not
    assert 671e9 < p.memory.weights_bytes < 671e9 + 2 * 129280 * 7168 * 2 + 10e9
    assert p.memory.fits
    assert not tokspeed.predict("deepseek-v3", "h200-sxm", engine="vllm", gpus=8, quant="F16").memory.fits


def test_gpt_oss_defaults_to_mxfp4_for_servers_and_for_llama_cpp():
    for engine in ("vllm", "llama.cpp"):
        p = tokspeed.predict("gpt-oss-20b", "h100-sxm", engine=engine)
        assert p.quant == "MXFP4", engine
    # llama.cpp takes it because it is smaller than Q4_K_M: the reason says so
    assert "smaller than Q4_K_M" in tokspeed.predict("gpt-oss-20b", "rtx-4090").quant_assumed


@pytest.mark.parametrize("engine,quant", [("llama.cpp", "Q4_K_M"), ("ollama", "Q4_K_M"), ("vllm", "BF16"),
                                          ("tensorrt-llm", "BF16"), ("ideal", "BF16")])
def test_a_bf16_release(engine, quant):
    p = tokspeed.predict("llama-3.1-8b", "h100-sxm", engine=engine)
    assert p.quant == quant and p.quant_assumed.startswith(quant + ":")


def test_released_fp8_on_a_device_without_fp8_falls_back_to_bf16():
    # the A100 has no FP8 tensor cores (capabilities.toml: FP8 needs fp8_tflops): vLLM runs BF16 there
    p = tokspeed.predict("deepseek-r1", "a100-80g-sxm", engine="vllm", gpus=8)
    assert p.quant == "BF16" and "FP8" in p.quant_assumed


def test_a_named_format_is_not_assumed():
    p = tokspeed.predict("llama-3.1-8b", "rtx-4090", quant="F16")
    assert p.quant == "F16" and p.quant_assumed is None
    assert p.to_dict()["quant_assumed"] is None


def test_json_and_table_say_which_format_was_assumed(capsys):
    assert main(["predict", "llama-3.1-8b", "--hardware", "rtx-4090", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["quant"] == "Q4_K_M" and "Q4_K_M" in d["quant_assumed"]
    assert main(["predict", "llama-3.1-8b", "--hardware", "rtx-4090"]) == 0
    out = capsys.readouterr().out
    assert "Q4_K_M (assumed)" in out and "weight format assumed" in out


def test_a_config_with_a_quantization_config_is_released_in_that_format():
    cfg = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000,
           "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}}
    spec = spec_from_hf_config(cfg, id="tiny")
    assert spec.released_format == "FP8"
    assert spec_from_hf_config({k: v for k, v in cfg.items() if k != "quantization_config"},
                               id="t").released_format == ""


def test_every_released_format_in_the_catalog_is_a_quant_name_with_a_source():
    from tokspeed.models.catalog import all_models
    from tokspeed.quant.schemes import scheme_for

    for m in all_models():
        if m.released_format:
            assert m.released_format_source.startswith("https://"), m.id
            scheme_for(m.released_format, m)      # a --quant name this model can take


def test_the_kept_answers_are_bounded_in_entries():
    # one (engine, device) answer kept per pair on the spec, never more than KEPT_MAX: a device read from a new file
    # on every request must not grow the model's cache without end
    from dataclasses import replace

    from tokspeed.derived import derived
    from tokspeed.engines.default_format import KEPT_MAX, default_quant
    from tokspeed.hardware.catalog import get_hardware
    from tokspeed.models.catalog import get_model

    spec = replace(get_model("llama-3-8b"))            # a fresh object: its own kept values
    hw = get_hardware("rtx-4090")
    first = default_quant(spec, "llama.cpp", hw)
    assert default_quant(spec, "llama.cpp", hw) is first
    for i in range(3 * KEPT_MAX):
        assert default_quant(spec, "llama.cpp", replace(hw, bandwidth_gbps=1000.0 + i)) == first
    assert 0 < len(derived(spec)["default_quant"]) <= KEPT_MAX
