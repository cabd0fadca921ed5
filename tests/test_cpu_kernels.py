"""CPU prompt-kernel paths (tokspeed.engines.cpu_kernels): which kernel ggml-cpu / ik_llama.cpp runs a weight type
through on an ISA and build, the units it runs on, and what that makes of a prediction -- each checked by hand from
the kernel sources' dispatch (repack.cpp, llamafile/sgemm.cpp, amx/common.h) and the catalog's per-core figures."""

import pytest

from tokspeed.engines.cpu_kernels import build_month_of, gemm_path, ggml_type, path_peak, width_share
from tokspeed.engines.eras import parse_version
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import matmul_rate
from tokspeed.hardware.catalog import get_hardware

CPU = get_engine("llama.cpp-cpu")
IK = get_engine("ik_llama.cpp-cpu")


def hw(name):
    return get_hardware(name).cpu_engine_view()


@pytest.mark.parametrize("fmt, base", [("Q4_K_M", "Q4_K"), ("Q2_K_S", "Q2_K"), ("UD-Q4_K_XL", "Q4_K"),
                                       ("IQ4_XS", "IQ4_XS"), ("Q8_0", "Q8_0"), ("Q6_K", "Q6_K")])
def test_the_tensor_type_behind_a_file_type(fmt, base):
    assert ggml_type(fmt) == base


@pytest.mark.parametrize("device, fmt, month, path", [
    # Zen 4 (AVX2 + AVX-512 VNNI/BF16, no AMX): today's repack.cpp repacks Q4_0 (q4_0_8x8) and Q4_K (q4_K_8x8) on
    # AVX2 and Q2_K on AVX-512; Q5_0 is tinyBLAS_Q0_AVX's; Q6_K / Q3_K have no x86 repack: vec_dot
    ("ryzen-9-7950x", "Q4_0", "", "repack"), ("ryzen-9-7950x", "Q4_K_M", "", "repack"),
    ("ryzen-9-7950x", "Q2_K_S", "", "repack"), ("ryzen-9-7950x", "Q5_0", "", "llamafile"),
    ("ryzen-9-7950x", "Q6_K", "", "vec_dot"), ("ryzen-9-7950x", "Q3_K_S", "", "vec_dot"),
    # a late-2024 build: Q4_0 not yet repacked on x86 (llamafile's), Q4_K not yet (vec_dot)
    ("ryzen-9-7950x", "Q4_0", "2024-11", "llamafile"), ("ryzen-9-7950x", "Q4_K_M", "2024-12", "vec_dot"),
    # 16-bit weights: BF16 on AVX-512 BF16's vdpbf16ps; F16 converted to FP32 on x86
    ("ryzen-9-7950x", "BF16", "", "float16"), ("ryzen-9-7950x", "F16", "", "float"),
    ("xeon-gold-6138-2s", "BF16", "", "float"),          # Skylake-SP: AVX-512 without BF16
    ("xeon-gold-6138-2s", "Q2_K_S", "", "repack"),       # ... but with AVX-512 F: q2_K_8x8
    # Sapphire Rapids without an AMX efficiency (none measured): the AVX paths
    ("xeon-spr-ddr5-4800-8ch", "Q4_K_M", "", "repack"), ("xeon-spr-ddr5-4800-8ch", "Q8_0", "", "llamafile"),
    ("xeon-spr-ddr5-4800-8ch", "IQ4_NL", "", "repack"), ("xeon-spr-ddr5-4800-8ch", "Q5_0", "", "llamafile"),
    # Arm (an M2 Max's CPU cluster, dotprod): Q4_0 and IQ4_NL repacked from late 2024, Q8_0 later; tinyBLAS_Q0_ARM
    # takes only Q8_0 / Q4_0, so Q5_0 is vec_dot; F16 on the FP16 vector units
    ("m2-max", "Q4_0", "2024-12", "repack"), ("m2-max", "IQ4_NL", "2024-12", "repack"),
    ("m2-max", "Q8_0", "2024-12", "llamafile"), ("m2-max", "Q8_0", "", "repack"),
    ("m2-max", "Q5_0", "", "vec_dot"), ("m2-max", "Q4_K_M", "2024-12", "vec_dot"), ("m2-max", "F16", "", "float16"),
])
def test_mainline_dispatch(device, fmt, month, path):
    assert gemm_path(CPU, hw(device), fmt, month) == path


def test_amx_tiles_take_the_types_amx_common_h_lists_once_an_engine_has_their_efficiency():
    """An engine with an ``amx`` efficiency on Sapphire Rapids: Q4_K / Q8_0 / IQ4_XS on the tiles; IQ4_NL (repack) and
    Q5_0 (llamafile) not; a Zen 4 (no AMX) never."""
    from dataclasses import replace

    amx = replace(CPU, eta_compute_format={**CPU.eta_compute_format, "amx": 0.5})
    spr = hw("xeon-spr-ddr5-4800-8ch")
    assert [gemm_path(amx, spr, f) for f in ("Q4_K_M", "Q8_0", "IQ4_XS", "IQ4_NL", "Q5_0")] == \
        ["amx", "amx", "amx", "repack", "llamafile"]
    assert gemm_path(amx, hw("ryzen-9-7950x"), "Q8_0") == "llamafile"


def test_ik_llama_runs_every_quantized_type_through_iqk():
    for fmt in ("Q8_0", "Q4_0", "Q4_K_S", "IQ4_XS", "IQ4_KS"):
        assert gemm_path(IK, hw("ryzen-9-7950x"), fmt) == "iqk"
    assert gemm_path(IK, hw("ryzen-9-7950x"), "BF16") == "float16"


def test_unit_peaks_by_hand():
    """Catalog FP32 peaks: Zen 4 7950X 16 x 32 x 4.5 GHz = 2.304 TF (256-bit datapath), Zen 5 EPYC 9355
    32 x 64 x 3.55 = 7.27 TF (512-bit), dual Xeon 6138 40 x 64 x 2.0 = 5.12 TF (512-bit, no VNNI)."""
    z4, z5, sk = hw("ryzen-9-7950x"), hw("epyc-9355"), hw("xeon-gold-6138-2s")
    assert width_share(z4, 256) == 1.0 and width_share(z5, 256) == 0.5 and width_share(sk, 256) == 0.5
    # vec_dot / tinyBLAS: 256-bit code, the FP32 lane rate at that width
    assert path_peak(z4, "vec_dot").flops == pytest.approx(2.304e12)
    assert path_peak(z5, "llamafile").flops == pytest.approx(7.27e12 / 2)
    # repacked GEMM on x86: vpmaddubsw + vpmaddwd, 2 x FP32 at 512 bits where the CPU has AVX-512
    assert path_peak(z5, "repack").flops == pytest.approx(2 * 7.27e12)
    assert path_peak(z4, "repack").flops == pytest.approx(2 * 2.304e12)
    # Arm repack: sdot, 4 x FP32 (an M2 Max's 8 P-cores x 32 x 3.5 GHz = 0.896 TF)
    assert path_peak(hw("m2-max"), "repack").flops == pytest.approx(4 * 0.896e12)
    # iqk: 512-bit only with VNNI (HAVE_FANCY_SIMD); Skylake-SP runs its AVX2 code: 2 x 5.12 / 2
    assert path_peak(z5, "iqk").flops == pytest.approx(4 * 7.27e12)
    assert path_peak(sk, "iqk").flops == pytest.approx(2 * 5.12e12 / 2)
    # AMX: 2048 int8 ops per cycle per core = 8 x AVX-512 VNNI's 256: 56 x 2048 x 2.0 GHz = 229 TOPS
    assert path_peak(hw("xeon-spr-ddr5-4800-8ch"), "amx").flops == pytest.approx(56 * 2048 * 2.0e9)
    # 16-bit multiply-adds fill twice the FP32 lanes
    assert path_peak(z4, "float16").flops == pytest.approx(2 * 2.304e12)


def test_a_512_bit_core_runs_256_bit_kernels_at_half_its_listed_peak():
    """The same catalog row as Zen 4 (256-bit units) and as Zen 5 (512-bit): a Q6_K prompt matmul (vec_dot, 256-bit)
    reaches the same FLOP/s on either only if the Zen 5 row lists twice the FP32 figure: here it lists the same,
    so it runs at half."""
    from dataclasses import replace

    z4 = hw("ryzen-9-7950x")
    z5 = replace(z4, arch="zen5")
    r4, r5 = matmul_rate(z4, CPU, "Q6_K", 0).value, matmul_rate(z5, CPU, "Q6_K", 0).value
    assert r5 / r4 == pytest.approx(0.5)


def test_prompt_rate_is_the_paths_share_of_its_units():
    """7950X, llama.cpp-cpu today: Q4_0 (repack) = eta[repack] x 2 x 2.304 TF; Q6_K (vec_dot) = eta[vec_dot] x
    2.304 TF; IQ4_XS on ik_llama.cpp (iqk, VNNI) = eta[iqk] x 4 x 2.304 TF."""
    z4 = hw("ryzen-9-7950x")
    eta, ik = CPU.eta_compute_format, IK.eta_compute_format
    assert matmul_rate(z4, CPU, "Q4_0", 0).value == pytest.approx(eta["repack"] * 2 * 2.304e12)
    assert matmul_rate(z4, CPU, "Q6_K", 0).value == pytest.approx(eta["vec_dot"] * 2.304e12)
    assert matmul_rate(z4, IK, "IQ4_XS", 0).value == pytest.approx(ik["iqk"] * 4 * 2.304e12)


def test_a_gpu_engine_on_a_soc_is_not_a_cpu_path():
    m2 = get_hardware("m2-max")
    metal = get_engine("llama.cpp-metal")
    assert "CPU" not in matmul_rate(m2, metal, "Q4_0", 512).unit


@pytest.mark.parametrize("version, month", [(None, ""), ("2024", "2024-12"), ("2025-08", "2025-08"),
                                            ("2025", "")])
def test_build_month(version, month):
    """An era label stands for its last month (2024 -> 2024-12); the open newest era for today's build."""
    assert build_month_of(parse_version("llama.cpp-cpu", version)) == month
    assert get_engine("llama.cpp-cpu", version=version).build_month == month


def test_one_tokens_kernels_and_their_units_by_hand():
    """Decode: a repacked type's gemv (repack.cpp), ik_llama.cpp's own, else the format group's vec_dot. x86 runs
    them as 256-bit code: the vec_dot at the int8 rate (Zen 4 VNNI: 4 x 2.304 TF; a Zen 5 EPYC 9355 issues half its
    512-bit 4 x 7.27 TF), the repacked gemv at vpmaddubsw + vpmaddwd's 2 x FP32 (Zen 5: 2 x 7.27 / 2); Arm at sdot's
    4 x (M2 Max: 4 x 0.896 TF); ik_llama.cpp on Skylake-SP (no VNNI: its AVX2 code) at 2 x 5.12 / 2."""
    from tokspeed.engines.cpu_kernels import matvec_key, matvec_peak

    z4, z5, m2, sk = hw("ryzen-9-7950x"), hw("epyc-9355"), hw("m2-max"), hw("xeon-gold-6138-2s")
    assert matvec_key(CPU, z4, "Q6_K") == "kquant" and matvec_key(CPU, z4, "Q4_0") == "repack"
    assert matvec_key(CPU, z4, "Q4_0", "2024-11") == "legacy" and matvec_key(IK, z4, "Q4_0") == "iqk"
    assert matvec_peak(z4, "kquant") == pytest.approx(4 * 2.304e12)
    assert matvec_peak(z5, "kquant") == pytest.approx(4 * 7.27e12 / 2)
    assert matvec_peak(z5, "repack") == pytest.approx(2 * 7.27e12 / 2)
    assert matvec_peak(m2, "repack") == pytest.approx(4 * 0.896e12)
    assert matvec_peak(sk, "iqk") == pytest.approx(2 * 5.12e12 / 2)
