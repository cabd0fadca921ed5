"""AMD and Intel GPUs under llama.cpp (#11): compute units and Xe-cores in the kernel bound, the HIP build
running CUDA's decode memory model, and the priors of the backends without calibration rows reproducing
the public figures they cite (tokspeed/engines/priors.toml [ROCMLB], [STRIXLB], [SYCLLB])."""

import pytest

from tokspeed.engines.issue import core_cycles_per_s, fp32_lanes_per_core
from tokspeed.engines.profile import get_engine, prior_profile
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.spec import Hardware
from tokspeed.predict import predict
from tokspeed.engines.rates_stream import kernel_bytes_s, stream_bytes_s


def part(name, vendor, fp32=1.0, kind="gpu", **kw):
    return Hardware(id="x", name=name, kind=kind, vendor=vendor, memory_gb=16, bandwidth_gbps=560, fp32_tflops=fp32,
                    **kw)


# compute units x clock from AMD's spec sheets: MI210 104 CUs at 1.7 GHz; MI250X 220 CUs at 1.7 GHz (110 per
# GCD, the catalog's device); MI300X 304 CUs at 2.1 GHz; MI355X 256 CUs at 2.4 GHz; RX 7900 XTX 96 CUs at
# 2.5 GHz; Radeon 8060S (Ryzen AI Max+ 395) 40 CUs at 2.9 GHz
@pytest.mark.parametrize("hw_id,cus,ghz", [("mi210", 104, 1.7), ("mi250x", 110, 1.7), ("mi300x", 304, 2.1),
                                           ("mi355x", 256, 2.4), ("rx-7900-xtx", 96, 2.5),
                                           ("ryzen-ai-max-395", 40, 2.9)])
def test_amd_core_cycles_are_compute_units_times_clock(hw_id, cus, ghz):
    assert core_cycles_per_s(get_hardware(hw_id)) == pytest.approx(cus * ghz * 1e9, rel=0.01)


def test_lanes_per_core_of_amd_and_intel_parts():
    # FP32 lanes per CU as the vendors' FP32 peaks count them: 64 on GCN / CDNA 1-2 / RDNA 1-2, 128 with
    # packed FP32 (CDNA 3) or dual issue (RDNA 3); Intel Xe-cores 16 x 8 (Xe-HPG) or 8 x 16 (Xe2) lanes
    assert fp32_lanes_per_core(part("AMD Instinct MI100", "AMD")) == 64
    assert fp32_lanes_per_core(part("AMD Radeon RX 6900 XT", "AMD")) == 64
    assert fp32_lanes_per_core(part("AMD Radeon RX 9070 XT", "AMD")) == 128
    assert fp32_lanes_per_core(part("AMD Radeon 780M", "AMD", kind="soc")) == 128
    assert fp32_lanes_per_core(part("AMD Radeon 8050S", "AMD", kind="soc")) == 128     # Strix Halo, 32 CUs
    assert fp32_lanes_per_core(part("AMD Radeon 680M", "AMD", kind="soc")) == 64      # RDNA 2 iGPU
    assert fp32_lanes_per_core(part("AMD Instinct MI300A", "AMD")) == 128
    assert fp32_lanes_per_core(part("AMD Radeon RX 580", "AMD")) == 64              # GCN 4
    assert fp32_lanes_per_core(part("ASUS ROG Strix RX 6800 XT", "AMD")) == 64       # a board named Strix
    assert fp32_lanes_per_core(part("AMD Radeon RX 7900 XTX", "Advanced Micro Devices, Inc.")) == 128
    assert fp32_lanes_per_core(part("Intel Arc A380", "Intel(R) Corporation")) == 128
    assert fp32_lanes_per_core(part("Intel Iris Xe Graphics", "Intel")) == 0          # Xe-LP: EUs, not Xe-cores
    assert fp32_lanes_per_core(part("Intel Arc A770", "Intel")) == 128
    assert fp32_lanes_per_core(part("Intel Arc B580", "Intel")) == 128
    assert fp32_lanes_per_core(part("Intel Data Center GPU Max 1550", "Intel")) == 128
    assert core_cycles_per_s(get_hardware("gaudi-3")) == 0.0          # an accelerator without GPU cores
    assert core_cycles_per_s(get_hardware("epyc-genoa-ddr5-4800-12ch")) == 0.0
    # Arc A770 at its 2.4 GHz boost: 32 Xe-cores -> 19.66 TF FP32
    assert core_cycles_per_s(part("Intel Arc A770", "Intel", fp32=19.66)) == pytest.approx(32 * 2.4e9, rel=0.01)


def test_a_backend_without_rows_decodes_with_the_kernels_it_compiles():
    # ik_llama.cpp's CUDA engine has no single-device rows: it takes mainline CUDA's decode memory model
    ik, cuda = get_engine("ik_llama.cpp-cuda"), get_engine("llama.cpp-cuda")
    for f in ("eta_mem", "bytes_per_core_cycle", "eta_format", "eta_kv", "fixed_s"):
        assert getattr(ik, f) == getattr(cuda, f), f
    assert ik.launch_s == 4e-6 and ik.bw_cap_gbps == 0.0 and not ik.fitted
    assert "llama.cpp-cuda era 2025" in ik.source
    # ROCm's documented prior resolves the same way, against CUDA's prior; since calibration-3.csv it has rows of
    # its own, whose fit wins over what it borrows
    assert prior_profile("llama.cpp-rocm").eta_mem == prior_profile("llama.cpp-cuda").eta_mem
    rocm = get_engine("llama.cpp-rocm")
    assert rocm.fitted and rocm.eta_mem != cuda.eta_mem and "fitted by scripts/fit_calibration.py" in rocm.source


def test_an_engines_own_values_win_over_the_kernels_it_borrows():
    from tokspeed.engines.tables import with_shared_kernels

    shared = {"eta_mem": {"default": 0.9}, "fixed_s": 3e-4, "launch_s": 1e-6}
    out = with_shared_kernels({"eta_mem": {"default": 0.6}, "launch_s": 7e-6}, shared, "llama.cpp-cuda")
    assert out["eta_mem"] == {"default": 0.6} and out["fixed_s"] == 3e-4 and out["launch_s"] == 7e-6
    with pytest.raises(ValueError):
        with_shared_kernels({}, shared, "llama.cpp-rocm")       # borrowing from a borrower: refused


def decode(hw, quant="Q4_0", engine="llama.cpp"):
    return predict("llama-2-7b", hw, quant=quant, engine=engine, prompt=0, gen=128).decode


@pytest.mark.parametrize("hw_id,lo,hi", [
    ("rx-7900-xtx", 120, 135),        # [ROCMLB] public ROCm llama-bench tables, 2024-25
    ("ryzen-ai-max-395", 45, 50),     # [STRIXLB] Strix Halo tables, 2025
])
def test_rocm_reproduces_the_public_figures_it_cites(hw_id, lo, hi):
    assert decode(get_hardware(hw_id)).tok_s == pytest.approx((lo + hi) / 2, rel=0.15)


@pytest.mark.parametrize("hw_id", ["rtx-4090", "h100-sxm", "jetson-agx-orin-64g", "ryzen-ai-max-395", "radeon-ai-pro-r9700"])
def test_the_priors_memory_fraction_is_the_memorys_whatever_the_api(hw_id):
    """[VKMEM]: CUDA's priors (ROCm takes its kernels) and Vulkan's read weights at the memory technology's fraction
    of the peak: HBM from gpt-fast's A100 figure (1,300+ of 2,039 GB/s: within 0.015), LPDDR from the M1 Max GPU's
    measured 317.6 of 409.6 GB/s ([HWNOTES]), other memory 0.75."""
    from tokspeed.engines.memory import memory_class
    from tokspeed.engines.profile import prior_profile

    hw = get_hardware(hw_id)
    expected = {"hbm": 1300 / 2039, "lpddr": 317.6 / 409.6, "gddr": 0.75}[memory_class(hw)]
    for engine in ("llama.cpp-cuda", "llama.cpp-rocm", "llama.cpp-vulkan"):
        assert prior_profile(engine).mem_eff(memory_class(hw)) == pytest.approx(expected, abs=0.015)


def test_strix_halo_is_memory_bound_not_kernel_bound():
    # 40 CUs x 2.9 GHz x ~7 B per core cycle ~ 0.8 TB/s of kernel bound against 256 GB/s of LPDDR5X: the memory
    # side decides (llama.cpp-cuda's fitted LPDDR fraction, from the Jetson Orin rows), where the old ROCm prior
    # put every device at 0.5 of peak and added its launches on top (29.8 tok/s)
    hw = get_hardware("ryzen-ai-max-395")
    rocm = get_engine("llama.cpp", hw)
    assert kernel_bytes_s(rocm, hw) == pytest.approx(40 * 2.9e9 * rocm.bytes_per_core_cycle, rel=0.01)
    assert kernel_bytes_s(rocm, hw) > 3 * 256e9
    assert decode(hw).tok_s > 40


def test_sycl_prior_reproduces_the_arc_a770_figure_it_was_solved_from():
    # [SYCLLB]: Arc A770 (560 GB/s GDDR6, 32 Xe-cores at 2.1 GHz) decodes llama-2-7b Q4_0 at ~40-55 tok/s. The
    # prior was solved from it; since calibration-3.csv SYCL is fitted (Arc Pro B70, Lunar Lake rows), so the prior
    # is checked on its own
    from tokspeed.engines.profile import calibrated, prior_profile

    arc = get_hardware("arc-a770")
    assert get_engine("llama.cpp", arc).name == "llama.cpp-sycl"
    assert core_cycles_per_s(arc) == pytest.approx(32 * 2.1e9, rel=0.01)
    assert 40 < decode(arc, engine=calibrated(prior_profile("llama.cpp-sycl"), arc)).tok_s < 55


def test_a_big_instinct_part_is_no_longer_capped_at_one_tb_s():
    # the 1,065 GB/s cap the ROCm prior carried (llama.cpp-cuda's 2024 fit) is gone: the kernel bound of 304 CUs
    # lets an MI300X stream at its HBM efficiency (0.6-0.8 of 5.3 TB/s, as CUDA's fit puts it on HBM parts) under its
    # kernel bound (304 CUs x 2.1 GHz x ~7 B = 4.5 TB/s): well above 2.5 TB/s; an MI210 (104 CUs at 1.7 GHz) near 1 TB/s
    rocm = get_engine("llama.cpp-rocm")
    assert stream_bytes_s(rocm, get_hardware("mi300x")) > 2.5e12
    assert 0.8e12 < stream_bytes_s(rocm, get_hardware("mi210")) < 1.2e12


@pytest.mark.parametrize("hw_id", ["mi210", "mi250x", "mi300x", "mi325x", "mi355x", "mi100"])
def test_vulkan_and_lm_studio_do_not_run_on_a_cdna_instinct(hw_id):
    # CDNA parts have no graphics pipeline and no Vulkan driver; the fitted Vulkan profile (launch_s 0, GDDR
    # fraction) said 646 tok/s for llama-2-7b Q4_0 on an MI300X
    from tokspeed.engines.compat import engines_for
    from tokspeed.errors import UserError

    hw = get_hardware(hw_id)
    for engine in ("llama.cpp-vulkan", "lm-studio"):
        with pytest.raises(UserError) as e:
            predict("llama-2-7b", hw, quant="Q4_0", engine=engine)
        assert "no Vulkan driver" in str(e.value) and "llama.cpp-rocm" in e.value.suggestion
    assert "llama.cpp-vulkan" not in engines_for(hw) and "llama.cpp" in engines_for(hw)


@pytest.mark.parametrize("hw_id", ["mi50", "rx-7900-xtx", "ryzen-ai-max-395", "arc-a770", "h100-sxm"])
def test_vulkan_still_runs_on_gcn_radeon_intel_and_nvidia(hw_id):
    assert predict("llama-2-7b", get_hardware(hw_id), quant="Q4_0", engine="llama.cpp-vulkan").decode.tok_s > 0


def test_fit_says_why_an_engine_has_nothing_to_run_on_a_device():
    from tokspeed.errors import UserError
    from tokspeed.advise.runs_here import rank_models

    with pytest.raises(UserError) as e:
        rank_models("mi300x", engine="lm-studio")
    assert "no Vulkan driver" in str(e.value)


def test_not_on_matches_a_custom_file_by_id_or_alias_too():
    from tokspeed.engines.compat import engines_for

    hw = Hardware(id="instinct-mi300x", name="MI300X", kind="gpu", vendor="AMD", memory_gb=192, bandwidth_gbps=5300)
    assert "llama.cpp-vulkan" not in engines_for(hw)
