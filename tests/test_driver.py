"""The GPU driver as an input (issue 27): the vocabulary, the default per OS, the features that pick a kernel path,
the hardware field and the --driver / --os flags.

Expected values come from the catalog's vendor figures and ggml-vulkan.cpp's rules (tokspeed/engines/drivers.toml
cites them), not from the code's output: e.g. the Radeon AI PRO R9700 lists 191.4 dense FP16 TFLOPS on its WMMA
units and 47.8 FP32 TFLOPS on its vector ALUs (64 CUs x 64 lanes x 2 (FMA) x 2 (dual issue) x 2.92 GHz), so BF16
weights on the FP32 fallback shader run at 47.8 / 191.4 of the cooperative-matrix rate.
"""

import json
from dataclasses import replace

import pytest

from conftest import run_cli
from tokspeed.engines import driver
from tokspeed.engines.backends import backend_view, uses_matrix_units
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware

R9700_FP16, R9700_FP32 = 191.4, 47.8      # AMD Radeon AI PRO R9700 data sheet: dense FP16 matrix, FP32 vector


@pytest.fixture(scope="module")
def r9700():
    hw = get_hardware("radeon-ai-pro-r9700")
    assert (hw.fp16_tflops, hw.fp32_tflops, hw.arch) == (R9700_FP16, R9700_FP32, "rdna4")
    return hw


# ---- the vocabulary and the default per OS ---------------------------------------------------------------------

@pytest.mark.parametrize("name, os_name, vendor_hw, backend, expected", [
    # Linux: Mesa's drivers for AMD and Intel (what distributions ship), NVIDIA's own; Windows: the vendors' own
    ("", "", "radeon-ai-pro-r9700", "llama.cpp-vulkan", "radv"),
    ("", "windows", "radeon-ai-pro-r9700", "llama.cpp-vulkan", "amd-windows"),
    ("", "", "arc-pro-b70", "llama.cpp-vulkan", "anv"),
    ("", "windows", "arc-pro-b70", "llama.cpp-vulkan", "intel-windows"),
    ("", "", "rtx-4090", "llama.cpp-vulkan", "nvidia"),
    ("", "", "rtx-4090", "llama.cpp-cuda", "cuda"),
    ("", "", "radeon-ai-pro-r9700", "llama.cpp-rocm", "rocm-7"),
    ("", "windows", "radeon-ai-pro-r9700", "llama.cpp-rocm", "rocm-6"),
    ("", "", "arc-pro-b70", "llama.cpp-sycl", "level-zero"),
    ("", "", "m2-max", "llama.cpp-metal", "metal"),          # Apple: macOS without saying so
    ("amdvlk", "", "radeon-ai-pro-r9700", "llama.cpp-vulkan", "amdvlk"),
])
def test_driver_default_per_os(name, os_name, vendor_hw, backend, expected):
    hw = replace(get_hardware(vendor_hw), driver=name, os=os_name)
    d = driver.resolve(backend, hw)
    assert d.name == expected
    # assumed (and said) only where there was a choice and none was named: CUDA and Metal have one driver
    assert (d.assumed is not None) == (not name and expected not in ("cuda", "metal"))
    if d.assumed and not os_name:
        assert "no os stated" in d.assumed


def test_no_driver_for_engines_without_a_choice():
    assert driver.resolve("llama.cpp-cpu", get_hardware("rtx-4090")) is None
    assert driver.resolve("vllm", get_hardware("rtx-4090")) is None


def test_every_driver_entry_is_complete_and_sourced():
    for name in driver.names():
        e = driver.entry(name)
        assert e["api"] in driver.APIS and e["vendors"] and set(e["os"]) <= set(driver.OSES), name
        assert set(e["os_default"]) <= set(e["os"]) and e["source"] and e["confidence"] in ("high", "medium", "low")
    # one default per (api, vendor, os): the table never leaves the choice to its order
    seen = {}
    for name in driver.names():
        e = driver.entry(name)
        for v in e["vendors"]:
            for o in e["os_default"]:
                assert (e["api"], v, o) not in seen, (name, seen.get((e["api"], v, o)))
                seen[e["api"], v, o] = name


# ---- features -> kernel path -> units ------------------------------------------------------------------------

def test_amdvlk_bf16_takes_the_fp32_fallback(r9700):
    """AMDVLK has no BF16 cooperative matrices: BF16 weights run matmul_bf16_fp32 on the vector ALUs at the FP32
    figure; RADV multiplies them on the WMMA units; other formats keep the matrix units under both."""
    amdvlk, radv = replace(r9700, driver="amdvlk"), replace(r9700, driver="radv")
    assert backend_view("llama.cpp-vulkan", amdvlk, "BF16").fp16_tflops == R9700_FP32
    assert backend_view("llama.cpp-vulkan", radv, "BF16").fp16_tflops == R9700_FP16
    assert backend_view("llama.cpp-vulkan", amdvlk, "Q4_K_M").fp16_tflops == R9700_FP16
    assert backend_view("llama.cpp-rocm", replace(r9700, driver="rocm-7"), "BF16").fp16_tflops == R9700_FP16


def test_bf16_prefill_rate_by_hand(r9700):
    """The prompt matmul's FLOP/s: peak x eta_compute x format x ramp, the same factors under both drivers (no MMQ
    or power bound for BF16 on Vulkan), and under RADV the coopmat1 shaders' share of the matrix units
    (backends.COOPMAT1_SHARE: AMD has no coopmat2), which AMDVLK's FP32 fallback shader does not take: the ratio is
    47.8 / (191.4 x 0.679)."""
    from tokspeed.engines.backends import COOPMAT1_SHARE
    from tokspeed.engines.profile import get_engine
    from tokspeed.engines.rates import matmul_rate

    rates = {}
    for name in ("amdvlk", "radv"):
        hw = replace(r9700, driver=name)
        prof = get_engine("llama.cpp-vulkan", hw)
        rate = matmul_rate(backend_view("llama.cpp-vulkan", hw, "BF16"), prof, "BF16", 512)
        eta = prof.compute_eff_for(hw) * prof.compute_format_eff("BF16") * (512 / (512 + prof.gemm_half_tokens))
        rates[name] = rate.value
        peak = R9700_FP32 if name == "amdvlk" else R9700_FP16 * COOPMAT1_SHARE["matmul"]
        assert rate.value == pytest.approx(peak * 1e12 * eta, rel=1e-9)
    assert rates["amdvlk"] / rates["radv"] == pytest.approx(R9700_FP32 / (R9700_FP16 * 0.679), rel=1e-9)


def test_a_driver_without_cooperative_matrices_takes_the_scalar_path(r9700):
    """MoltenVK exposes no VK_KHR_cooperative_matrix: an RDNA4 part under it multiplies on its vector ALUs,
    packed FP16 (2 x the FP32 figure on AMD: 95.6 TFLOPS), where RADV reaches its WMMA units (191.4).
    The pairing (an RDNA4 card on macOS) is for the mechanism; the rule is the driver's."""
    mac = replace(r9700, driver="moltenvk", os="macos")
    assert uses_matrix_units("llama.cpp-vulkan", mac) is False
    assert backend_view("llama.cpp-vulkan", mac, "Q4_K_M").fp16_tflops == pytest.approx(2 * R9700_FP32)
    assert uses_matrix_units("llama.cpp-vulkan", r9700) is True


def test_the_driver_never_adds_units_the_part_lacks():
    """The Windows Intel driver runs coopmat shaders on integrated Xe-LP/LPG GPUs, which have no XMX: the matmuls
    stay on the vector ALUs (the backends table holds the units, the driver only the path)."""
    hw = replace(get_hardware("arc-a770"), arch="xe-lpg", matrix_units=("dp4a",), driver="intel-windows",
                 os="windows")          # as an Xe-LPG iGPU: int8 dot products, no XMX, no cooperative-matrix units
    f = driver.features(driver.resolve("llama.cpp-vulkan", hw), "xe-lp")
    assert f.coopmat and uses_matrix_units("llama.cpp-vulkan", hw) is False


# ---- hostile input ---------------------------------------------------------------------------------------------

def test_unknown_driver_is_one_line_exit_2_listing_the_known():
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "rx-7900-xtx", "--driver", "catalyst")
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown driver 'catalyst'" in lines[0]
    assert all(n in lines[0] for n in ("radv", "amdvlk", "anv", "nvk", "rocm-7", "level-zero"))
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, words", [
    (("--engine", "llama.cpp-vulkan", "--driver", "nvk"), "drives nvidia GPUs, not AMD"),
    (("--engine", "llama.cpp-rocm", "--os", "macos"), "no ROCm driver runs AMD GPUs on macOS"),
    (("--engine", "llama.cpp-vulkan", "--driver", "radv", "--os", "windows"), "ships for linux, not windows"),
    (("--os", "beos"), "os must be one of linux, windows, macos"),
])
def test_a_driver_that_cannot_serve_is_refused(args, words):
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "rx-7900-xtx", *args)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_driver_of_another_api_is_set_aside_for_the_backend_s_own():
    """A device drives several APIs: radv (Vulkan) says nothing of ROCm, the default engine on AMD; vLLM has no GPU
    driver choice at all. Neither refuses: the note says which driver was taken instead."""
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "rx-7900-xtx", "--driver", "radv", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["driver"] == "rocm-7"
    assert "driver radv is a Vulkan driver, and llama.cpp-rocm runs ROCm: rocm-7" in r.stderr
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "rx-7900-xtx", "--driver", "radv", "--engine", "vllm",
                "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["driver"] is None, r.stderr


def test_library_names_the_field_not_the_flag():
    with pytest.raises(UserError) as e:
        replace(get_hardware("rx-7900-xtx"), driver="catalyst")
    assert e.value.field == "driver" and "--driver" not in str(e.value)


# ---- flags, JSON, the stderr note, the hardware file -------------------------------------------------------------

def test_flags_reach_the_json():
    r = run_cli("predict", "qwen3-coder-30b-a3b", "--hardware", "radeon-ai-pro-r9700", "--engine", "llama.cpp-vulkan",
                "--quant", "BF16", "--driver", "AMDVLK", "--os", "linux", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["driver"] == "amdvlk" and doc["driver_assumed"] is None
    assert "driver assumed" not in r.stderr


def test_assumed_driver_in_json_and_on_stderr():
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "arc-pro-b70", "--engine", "llama.cpp-vulkan", "--json")
    doc = json.loads(r.stdout)
    assert doc["driver"] == "anv" and "Linux" in doc["driver_assumed"]
    assert "note: driver assumed: anv" in r.stderr
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "arc-pro-b70", "--engine", "llama.cpp-vulkan", "--os",
                "windows", "--json")
    assert json.loads(r.stdout)["driver"] == "intel-windows"


def test_driver_on_explain_fit_sweep():
    common = ("--hardware", "radeon-ai-pro-r9700", "--engine", "llama.cpp-vulkan", "--driver", "amdvlk")
    for verb in (("explain", "llama-3.1-8b", "--json"), ("sweep", "llama-3.1-8b", "--context", "1K", "--json")):
        r = run_cli(*verb, *common)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        doc = doc["prediction"] if verb[0] == "explain" else doc[0]
        assert doc["driver"] == "amdvlk"
    r = run_cli("fit", "--top", "1", "--json", *common)
    assert r.returncode == 0 and "driver assumed" not in r.stderr
    r = run_cli("fit", "--top", "1", "--json", "--hardware", "radeon-ai-pro-r9700", "--driver", "radv")
    # fit ranks under the default engine (ROCm on AMD): the Vulkan driver is set aside, and the note says so
    assert r.returncode == 0 and "driver radv is a Vulkan driver, and llama.cpp-rocm runs ROCm" in r.stderr, r.stderr


def test_hardware_file_driver_field(tmp_path):
    f = tmp_path / "box.toml"
    f.write_text('name = "my R9700 box"\nkind = "gpu"\nvendor = "AMD"\nmemory_gb = 32\nbandwidth_gbps = 640\n'
                 'fp16_tflops = 191.4\nfp32_tflops = 47.8\narch = "rdna4"\ndriver = "amdvlk"\nos = "linux"\n')
    r = run_cli("predict", "llama-3.1-8b", "--hardware", f, "--engine", "llama.cpp-vulkan", "--quant", "BF16", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["driver"] == "amdvlk"
    # --os alone over a file whose driver does not ship for it: that OS's default
    r = run_cli("predict", "llama-3.1-8b", "--hardware", f, "--engine", "llama.cpp-vulkan", "--os", "windows", "--json")
    assert json.loads(r.stdout)["driver"] == "amd-windows"


# ---- calibration rows: the driver their notes name --------------------------------------------------------------

def test_rows_read_the_driver_from_their_notes():
    from tokspeed.calibration.rows import REPO_CSV3, load_rows

    rows = {r.id: r for r in load_rows(REPO_CSV3)}
    # c3-0015: "Vulkan AMDVLK"; c3-0017: "Vulkan RADV (Mesa)"; c3-0099: "Intel open-source Mesa (ANV)";
    # c3-0307: jeffbolznv's RTX 5090 "Windows"; c3-0243: "Intel Windows/Linux driver not stated" (no OS: default)
    assert (rows["c3-0015"].driver, rows["c3-0015"].hw.driver) == ("amdvlk", "amdvlk")
    assert rows["c3-0017"].driver == "radv" and rows["c3-0099"].driver == "anv"
    assert (rows["c3-0307"].driver, rows["c3-0307"].hw.os) == ("nvidia", "windows")
    assert (rows["c3-0243"].driver, rows["c3-0243"].hw.os) == ("anv", "")
    # the fit's view of the AMDVLK BF16 row is the fallback's FP32 figure
    assert rows["c3-0015"].hw.fp16_tflops == rows["c3-0015"].hw.fp32_tflops


def test_driver_fitted_on_the_profile(r9700):
    from tokspeed.engines.profile import get_engine

    fitted = driver.fitted_drivers("llama.cpp-vulkan")
    # the fitted Vulkan rows run under NVIDIA's driver, Mesa ANV and, on the two-R9700 layer splits the fit takes
    # (calibration/split_rows.py), RADV and AMDVLK; none under AMD's Windows driver
    assert {"nvidia", "anv", "radv", "amdvlk"} <= fitted and "amd-windows" not in fitted
    assert get_engine("llama.cpp-vulkan", replace(r9700, driver="amdvlk")).driver_fitted is True
    assert get_engine("llama.cpp-vulkan", replace(r9700, driver="amd-windows", os="windows")).driver_fitted is False
    assert get_engine("llama.cpp-vulkan", get_hardware("arc-pro-b70")).driver_fitted is True
    # no driver choice (the CPU backend): nothing left unfitted
    assert get_engine("llama.cpp-cpu", get_hardware("rtx-4090")).driver_fitted is True


def test_serve_says_which_driver_it_simulated():
    r = run_cli("serve", "llama-3.1-8b", "--hardware", "rtx-4090", "--engine", "llama.cpp-vulkan", "--parallel", "tp=1",
                "--concurrency", "2", "--requests", "8", "--isl", "128", "--osl", "16", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["driver"] == "nvidia" and doc["driver_assumed"].startswith("nvidia, the Linux default")
    assert "note: driver assumed: nvidia" in r.stderr
