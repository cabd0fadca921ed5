"""The capability table (tokspeed/engines/capabilities.toml): what each engine runs, refused in one line
naming what would work; llama.cpp's backend by vendor; the runtime attribute; format groups."""

import pytest

from tests.conftest import run_cli
from tokspeed.engines import compat
from tokspeed.engines.compat import check, engines_for, supported_formats
from tokspeed.engines.profile import ENGINES, get_engine
from tokspeed.engines.rates import compute_class
from tokspeed.quant.format_key import format_group
from tokspeed.engines.tables import load_table
from tokspeed.errors import UserError
from tokspeed.hardware import get_hardware
from tokspeed.hardware.spec import Hardware
from tokspeed.quant.llamacpp_mix import DEFAULT as GGUF_FTYPES


def hw(name):
    return get_hardware(name)


@pytest.mark.parametrize("engine,device,works", [
    ("mlx", "rtx-4090", "llama.cpp-cuda"),
    ("vllm", "m4-max-40", "mlx"),
    ("tensorrt-llm", "m4-max-40", "mlx"),
    ("exllamav2", "m4-max-40", "llama.cpp-metal"),
])
def test_engine_on_the_wrong_vendor_is_refused_naming_what_runs(engine, device, works):
    with pytest.raises(UserError) as e:
        check(engine, hw(device))
    assert "does not run on" in str(e.value) and works in e.value.suggestion


def test_gptq_on_llama_cpp_names_gguf_formats_and_the_engines_that_load_gptq():
    with pytest.raises(UserError) as e:
        check("llama.cpp", hw("rtx-4090"), "GPTQ")
    assert "cannot load GPTQ" in str(e.value)
    assert "Q4_K_M" in e.value.suggestion and "vllm" in e.value.suggestion


def test_fp8_needs_fp8_tensor_cores():
    # A100: Ampere has no FP8 tensor cores (fp8_tflops blank in the reference table); H100 has them
    assert hw("a100-80g-sxm").fp8_tflops == 0 and hw("h100-sxm").fp8_tflops > 0
    with pytest.raises(UserError) as e:
        check("vllm", hw("a100-80g-sxm"), "FP8")
    assert "FP8" in str(e.value) and "BF16" in e.value.suggestion
    assert check("vllm", hw("h100-sxm"), "FP8") == "vllm"


def test_kv_dtype_the_engine_lacks_is_refused():
    with pytest.raises(UserError, match="no fp8 KV cache"):
        check("llama.cpp", hw("rtx-4090"), "Q4_K_M", "fp8")
    assert check("vllm", hw("h100-sxm"), "BF16", "fp8") == "vllm"


def test_cli_refusals_are_one_line_exit_2():
    for args in (["--engine", "mlx", "--hardware", "rtx-4090"], ["--engine", "vllm", "--hardware", "m4-max-40"],
                 ["-q", "GPTQ", "--hardware", "rtx-4090"], ["-q", "FP8", "--engine", "vllm", "--hardware", "a100-80g-sxm"]):
        r = run_cli("predict", "llama-3-8b", *args)
        assert r.returncode == 2, args
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("tokspeed: error:"), r.stderr


@pytest.mark.parametrize("device,backend", [
    ("rtx-4090", "llama.cpp-cuda"), ("h100-sxm", "llama.cpp-cuda"), ("dgx-spark", "llama.cpp-cuda"),
    ("m2-ultra-76", "llama.cpp-metal"), ("mi300x", "llama.cpp-rocm"), ("rx-7900-xtx", "llama.cpp-rocm"),
    ("ryzen-ai-max-395", "llama.cpp-rocm"), ("ddr5-5600-2ch", "llama.cpp-cpu"), ("grace-lpddr5x", "llama.cpp-cpu"),
])
def test_llama_cpp_picks_its_backend_by_vendor(device, backend):
    assert get_engine("llama.cpp", hw(device)).name == backend


def test_intel_gpu_gets_sycl_and_vulkan_only_when_asked(tmp_path):
    arc = Hardware(id="arc", name="Intel Arc A770", kind="gpu", vendor="Intel", memory_gb=16, bandwidth_gbps=560)
    assert get_engine("llama.cpp", arc).name == "llama.cpp-sycl"
    assert get_engine("llama.cpp-vulkan", arc).name == "llama.cpp-vulkan"
    assert "llama.cpp-vulkan" not in {get_engine("llama.cpp", hw(d)).name for d in ("rtx-4090", "mi300x", "m1-max-32")}


def test_a_tpu_has_no_llama_cpp_backend():
    with pytest.raises(UserError) as e:
        get_engine("llama.cpp", hw("tpu-v5e"))
    assert "vllm" in e.value.suggestion


def test_every_engine_has_a_capability_row_and_a_prior():
    priors = load_table("priors.toml")
    for e in ENGINES:
        assert compat.capabilities(e)["runtime"]
        if e not in ("ideal", "llama.cpp"):
            assert e in priors, e
    for e in ("llama.cpp-rocm", "llama.cpp-sycl", "ollama", "lm-studio", "sglang"):
        assert e in ENGINES


def test_runtime_replaces_name_prefixes():
    for e, rt in (("ollama", "llama.cpp"), ("lm-studio", "llama.cpp"), ("llama.cpp-rocm", "llama.cpp"),
                  ("vllm", "vllm"), ("sglang", "sglang")):
        assert get_engine(e, hw("rtx-4090") if e != "llama.cpp-rocm" else hw("mi300x")).runtime == rt
    from tokspeed.scale.parallel import default_style

    assert default_style("ollama") == "split" and default_style("sglang") == "tp"


def test_ollama_is_its_llama_cpp_backend_plus_a_per_token_cost():
    import tokspeed

    extra = load_table("priors.toml")["ollama"]["extra_fixed_s"]
    # ollama leaves FlashAttention off by default: its backend's attention runs unfused (score traffic)
    unfused = get_engine("llama.cpp", hw("rtx-4090"), flash_attention=False)
    assert unfused.attn_bytes_per_flop == get_engine("llama.cpp-cuda", version="2024").attn_bytes_per_flop > 0
    a = tokspeed.predict("llama-2-7b", "rtx-4090", quant="Q4_0", engine=unfused, prompt=0, gen=16)
    b = tokspeed.predict("llama-2-7b", "rtx-4090", quant="Q4_0", engine="ollama", prompt=0, gen=16)
    assert b.decode.ms_per_token / 1e3 - a.decode.ms_per_token / 1e3 == pytest.approx(extra, rel=1e-6)
    assert compat.engine_defaults("ollama") == {"context": 4096, "kv_dtype": "f16", "flash_attention": False}
    # over the device's own backend profile (an MI300X's family has no ROCm rows: that backend's priors)
    assert get_engine("llama.cpp-rocm", hw("mi300x"), flash_attention=False).source in get_engine("ollama", hw("mi300x")).source


def test_supported_formats():
    gguf = supported_formats("llama.cpp", hw("rtx-4090"))
    assert "Q4_K_M" in gguf and "MXFP4" in gguf and "GPTQ-4B-G128" not in gguf and "FP8" not in gguf
    assert "FP8" not in supported_formats("vllm", hw("a100-80g-sxm"))
    assert {"FP8", "AWQ-4B", "GPTQ-4B-G128", "BF16"} <= set(supported_formats("vllm", hw("h100-sxm")))
    assert "Q4_K_M" not in supported_formats("vllm", hw("h100-sxm"))
    assert supported_formats("mlx", hw("rtx-4090")) == []
    assert "EXL2-4.0" in supported_formats("exllamav2", hw("rtx-4090"))
    for q in supported_formats("vllm", hw("h100-sxm")):      # every listed name is runnable as listed
        check("vllm", hw("h100-sxm"), q)


def test_engines_for_a_device():
    assert "mlx" in engines_for(hw("m4-max-40")) and "vllm" not in engines_for(hw("m4-max-40"))
    assert engines_for(hw("tpu-v5e")) == ["vllm"]
    assert "llama.cpp" not in engines_for(hw("rtx-4090"), "AWQ-4B")


def test_gguf_list_is_every_llama_cpp_ftype():
    listed = set(compat.capabilities("llama.cpp-cuda")["weights"])
    assert {"F32", "F16", "BF16", "MXFP4", *GGUF_FTYPES} <= listed


def test_format_group_fails_on_an_unknown_format():
    assert [format_group(q) for q in ("F16", "Q8_0", "Q4_0", "Q4_K_M", "IQ2_XXS", "MXFP4", "GPTQ-4B-G128", "EXL2-4.5")] == \
        ["float", "q8", "legacy", "kquant", "kquant", "mxfp4", "int4", "int4"]
    with pytest.raises(UserError, match="unknown weight format"):
        format_group("NF4")   # bitsandbytes NF4: no tokspeed format (it was "int4" silently)


def test_compute_class_reads_the_hardware_field_not_the_name():
    named = Hardware(id="x", name="NVIDIA GeForce RTX 9999", kind="gpu", vendor="NVIDIA", memory_gb=24, bandwidth_gbps=1000)
    flagged = Hardware(id="y", name="My card", kind="gpu", vendor="NVIDIA", memory_gb=24, bandwidth_gbps=1000,
                       fp16_accumulate_2x=True)
    assert compute_class(named) == "gpu" and compute_class(flagged) == "geforce"
    # the catalog flags GeForce cards and the L40 (reference notes, pitfall 2), not the L40S
    assert hw("rtx-4090").fp16_accumulate_2x and hw("l40").fp16_accumulate_2x and not hw("l40s").fp16_accumulate_2x


def test_gpt_fast_attends_the_full_context_of_a_sliding_window_model():
    from tokspeed.engines.profile import attention_spec
    from tokspeed.resolve import resolve_model

    spec, _ = resolve_model("gemma-2-9b")
    assert spec.n_sliding_layers
    assert attention_spec(get_engine("gpt-fast"), spec).n_sliding_layers == 0
    assert attention_spec(get_engine("vllm"), spec).n_sliding_layers == spec.n_sliding_layers
