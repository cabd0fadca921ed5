"""ggml-vulkan's matrix-vector path per driver (engines/vk_matvec.py): which one-token matmuls take the Q8_1 shaders
in subgroup-sized workgroups, by hand from ``ggml_vk_should_use_mmvq`` and ``ggml_vk_get_dequantize_mul_mat_vec``
(llama-cpp-python 0.3.17's copy), and the factor that path puts on the weight stream, there and nowhere else."""

from dataclasses import replace

import pytest

from tokspeed.engines.driver import on_driver
from tokspeed.engines.issue import core_cycles_per_s
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import soft_min
from tokspeed.engines.rates_stream import stream_bytes_s, stream_rate
from tokspeed.engines.vk_matvec import MMVQ_SINCE, MMVQ_SUBGROUP, format_eff_on, runs_mmvq_subgroup
from tokspeed.explain.rates_text import stream_how
from tokspeed.hardware.catalog import get_hardware

VK = "llama.cpp-vulkan"
B70 = on_driver(get_hardware("arc-pro-b70"), "anv")


@pytest.mark.parametrize("fmt, path", [
    ("Q4_K_M", True), ("UD-Q4_K_XL@17598628495B", True), ("Q5_K_M", True), ("Q2_K", True),
    ("MXFP4", True), ("Q8_0", True),
    ("Q4_0", False), ("Q5_1", False),          # "from tests on A770 Linux": DMMV on Intel
    ("Q6_K", False), ("Q3_K_M", False),        # "2-byte alignment": DMMV on every vendor
    ("IQ4_XS", False),                         # no Q8_1 shader: DMMV
    ("BF16", False), ("F16", False),           # float weights: DMMV
])
def test_intel_mesa_formats(fmt, path):
    assert runs_mmvq_subgroup(VK, B70, fmt) is path


def test_other_drivers_builds_and_backends():
    # the Windows driver: never MMVQ (issue 17628); AMD and NVIDIA: MMVQ in the large workgroups, not this path
    assert not runs_mmvq_subgroup(VK, on_driver(get_hardware("arc-pro-b70"), "intel-windows"), "Q4_K_M")
    assert not runs_mmvq_subgroup(VK, on_driver(get_hardware("rx-9070-xt"), "radv"), "Q4_K_M")
    assert not runs_mmvq_subgroup(VK, get_hardware("rtx-3090"), "Q4_K_M")
    # Xe1 (the A770) under ANV exposes integer dot products as Xe2 does (drivers.toml integer_dot)
    assert runs_mmvq_subgroup(VK, on_driver(get_hardware("arc-a770"), "anv"), "Q4_K_M")
    # a build before the shaders (0.3.16's copy of 2025-08 has none) and other backends
    assert not runs_mmvq_subgroup(VK, B70, "Q4_K_M", "2025-08")
    assert runs_mmvq_subgroup(VK, B70, "Q4_K_M", MMVQ_SINCE)
    assert not runs_mmvq_subgroup("llama.cpp-sycl", get_hardware("arc-pro-b70"), "Q4_K_M")


def _profile(**eta_format):
    return replace(get_engine(VK), eta_format=eta_format, bytes_per_core_cycle=8.0, eta_mem={"default": 0.8},
                   bw_cap_gbps=0.0, build_month="")


def test_stream_by_hand():
    p = _profile(kquant=0.9, **{MMVQ_SUBGROUP: 0.4})
    mem = 608e9 * 0.8                                   # the B70's 608 GB/s x eta_mem
    kernel = core_cycles_per_s(B70) * 8.0               # cores x clock x bytes per core cycle
    # K-quants: the kernel bound x the group's factor x the path's; Q4_0 (DMMV): the group's alone (1: unlisted)
    assert stream_bytes_s(p, B70, "Q4_K_M") == pytest.approx(soft_min(mem, kernel * 0.9 * 0.4), rel=1e-12)
    assert stream_bytes_s(p, B70, "Q4_0") == pytest.approx(soft_min(mem, kernel), rel=1e-12)
    # a device off the path keeps the group's factor alone
    nv = get_hardware("rtx-3090")
    assert stream_bytes_s(p, nv, "Q4_K_M") == pytest.approx(
        soft_min(nv.bandwidth_bytes_s * 0.8, core_cycles_per_s(nv) * 8.0 * 0.9), rel=1e-12)
    assert format_eff_on(p, nv, "Q4_K_M") == 0.9 and format_eff_on(p, B70, "Q4_K_M") == pytest.approx(0.36)


def test_explain_names_both_factors():
    s = stream_rate(_profile(kquant=0.9, **{MMVQ_SUBGROUP: 0.4}), B70, "Q4_K_M")
    assert (s.group, s.eta_format, s.path, s.path_eff) == ("kquant", 0.9, MMVQ_SUBGROUP, pytest.approx(0.4))
    assert "eta_format[kquant] 0.90 x eta_format[mmvq-subgroup] 0.40" in stream_how(s)


def test_shipped_tables_keep_the_path_factor_off_other_vendors():
    # the fit's path factor reaches the devices whose driver runs the path and no other (the regression it mends:
    # one K-quant factor, fitted on the B70's MMVQ rows, slowed NVIDIA's and AMD's DMMV decode as well)
    for name in ("rtx-3090", "rtx-4090", "rx-9070-xt"):
        hw = get_hardware(name)
        eng = get_engine(VK, hw)
        assert format_eff_on(eng, hw, "Q4_K_M") == eng.format_eff("Q4_K_M")


def test_the_fit_takes_the_path_factor_only_where_decode_rows_run_the_path():
    import importlib.util
    import sys
    from pathlib import Path

    from tokspeed.calibration.rows import load_rows
    from tokspeed.engines.profile import prior_profile

    path = Path(__file__).resolve().parents[1] / "scripts" / "fit_calibration.py"
    spec = importlib.util.spec_from_file_location("fit_calibration", path)
    fit = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fit
    spec.loader.exec_module(fit)
    rows = [r for r in load_rows(None) if r.engine == VK and not r.skip]
    on = [r for r in rows if r.kind == "decode" and runs_mmvq_subgroup(VK, r.hw, r.quant, r.month)]
    # the Arc Pro B70's K-quant and MXFP4 decode rows (kyuz0, b9039) and Lunar Lake's UD-Q4_K_XL one
    assert {r.hw.name.split(" (")[0] for r in on} == {"Intel Arc Pro B70", "Intel Core Ultra 7 258V"} and len(on) == 11

    def keys(rs):
        return {(p.field, p.key) for p in fit.param_space(prior_profile(VK), rs)}
    assert ("eta_format", MMVQ_SUBGROUP) in keys(rows)
    assert ("eta_format", MMVQ_SUBGROUP) not in keys([r for r in rows if r not in on])
