"""Vulkan on NVIDIA: the coopmat1 and coopmat2 prompt paths (engines/backends.py COOPMAT1_SHARE) and the driver
that selects them (drivers.toml nvidia-cm1), derived by hand from the paired calibration rows."""

import csv
from pathlib import Path

import pytest

from tokspeed.engines.backends import COOPMAT1_SHARE, coopmat1_share
from tokspeed.engines.driver import on_driver
from tokspeed.engines.profile import get_engine
from tokspeed.engines.rates import compute_rate
from tokspeed.hardware.catalog import get_hardware

CSV3 = Path(__file__).resolve().parents[1] / "data" / "validation" / "calibration-3.csv"


def _affine(points):
    """Least-squares a, b of t = a + b x over (x, t) points, by the normal equations."""
    n = len(points)
    sx = sum(x for x, _ in points)
    st = sum(t for _, t in points)
    sxx = sum(x * x for x, _ in points)
    sxt = sum(x * t for x, t in points)
    b = (n * sxt - sx * st) / (n * sxx - sx * sx)
    return (st - b * sx) / n, b


def test_share_refits_from_the_paired_rows():
    rows = {r["id"]: r for r in csv.DictReader(open(CSV3, newline=""))}
    fits = {}
    for path, ids in (("cm2", range(307, 311)), ("cm1", range(311, 315))):
        pts = []
        for i in ids:
            r = rows[f"c3-{i:04d}"]
            assert r["hardware"] == "NVIDIA GeForce RTX 5090" and r["prompt_tokens"] == "1024"
            # seconds per prompt token at the prompt's mean depth (the rows' -d plus half the 1,024-token prompt)
            pts.append((int(r["context_depth"]) + 512, 1.0 / float(r["tok_s"])))
        fits[path] = _affine(pts)
    (a2, b2), (a1, b1) = fits["cm2"], fits["cm1"]
    assert a2 == pytest.approx(85.7e-6, rel=2e-3) and a1 == pytest.approx(126.2e-6, rel=2e-3)
    assert COOPMAT1_SHARE["matmul"] == pytest.approx(a2 / a1, abs=5e-4)
    assert COOPMAT1_SHARE["attn"] == pytest.approx(b2 / b1, abs=5e-4)


def test_share_applies_wherever_the_coopmat1_shaders_run():
    hw = get_hardware("rtx-5090")
    cm1 = on_driver(hw, "nvidia-cm1")
    assert coopmat1_share("llama.cpp-vulkan", hw, False) == 1.0            # the default driver has coopmat2
    assert coopmat1_share("llama.cpp-vulkan", cm1, False) == COOPMAT1_SHARE["matmul"]
    assert coopmat1_share("llama.cpp-vulkan", cm1, True) == COOPMAT1_SHARE["attn"]
    assert coopmat1_share("llama.cpp-cuda", cm1, False) == 1.0              # not a Vulkan backend
    # AMD RDNA3 / RDNA4 under RADV and Intel Xe2 under ANV: VK_KHR_cooperative_matrix only (drivers.toml), the same
    # coopmat1 shaders; the B70's FlashAttention runs FA_SCALAR on the vector ALUs (archs.toml: no coopmat1 FA)
    radv = on_driver(get_hardware("rx-7900-xtx"), "radv")
    assert coopmat1_share("llama.cpp-vulkan", radv, False) == COOPMAT1_SHARE["matmul"]
    assert coopmat1_share("llama.cpp-vulkan", radv, True) == COOPMAT1_SHARE["attn"]
    anv = on_driver(get_hardware("arc-pro-b70"), "anv")
    assert coopmat1_share("llama.cpp-vulkan", anv, False) == COOPMAT1_SHARE["matmul"]
    assert coopmat1_share("llama.cpp-vulkan", anv, True) == 1.0
    # BF16 weights under a driver without BF16 cooperative matrices run the FP32 fallback shader (matmul_bf16_fp32,
    # driver.bf16_fallback): no coopmat1 shader, no share; RADV has them on RDNA4, AMDVLK and ANV do not
    r9700 = get_hardware("radeon-ai-pro-r9700")
    assert coopmat1_share("llama.cpp-vulkan", on_driver(r9700, "radv"), False, "BF16") == COOPMAT1_SHARE["matmul"]
    assert coopmat1_share("llama.cpp-vulkan", on_driver(r9700, "amdvlk"), False, "BF16") == 1.0
    assert coopmat1_share("llama.cpp-vulkan", anv, False, "BF16") == 1.0
    assert coopmat1_share("llama.cpp-vulkan", anv, False, "Q4_0") == COOPMAT1_SHARE["matmul"]
    # RDNA2 has no cooperative matrices: its prompts run the vector shaders, no share
    assert coopmat1_share("llama.cpp-vulkan", on_driver(get_hardware("rx-6800-xt"), "radv"), False) == 1.0


def test_rates_carry_the_share():
    hw = get_hardware("rtx-5090")
    cm1 = on_driver(hw, "nvidia-cm1")
    eng = get_engine("llama.cpp-vulkan", hw)
    # a prompt's weight matmul and its FlashAttention tiles: the coopmat2 eta times the share
    for attn, key in ((False, "matmul"), (True, "attn")):
        two = compute_rate(hw, eng, "Q4_0", 512, "tensor", attn)
        one = compute_rate(cm1, eng, "Q4_0", 512, "tensor", attn)
        assert one.eta == pytest.approx(two.eta * COOPMAT1_SHARE[key])
    # a decode pass runs the matrix-vector shaders, the same under both drivers
    assert compute_rate(cm1, eng, "Q4_0", 1).value == compute_rate(hw, eng, "Q4_0", 1).value


def test_rows_name_the_driver():
    from tokspeed.calibration.rows import load_rows

    rows = {r.id: r for r in load_rows(CSV3)}
    assert rows["c3-0307"].driver == "nvidia"              # "Vulkan NV_coopmat2"
    assert rows["c3-0311"].driver == "nvidia-cm1"          # "Vulkan KHR_coopmat (coopmat1)"
    assert rows["c3-0299"].driver == "nvidia-cm1"          # "NVIDIA driver without coopmat2"
    assert rows["c3-0299"].ubatch == 1024                  # "n_ubatch 1024"
    # "Intel open-source Mesa (ANV) driver, KHR_coopmat": the first driver named that drives Intel GPUs
    assert rows["c3-0160"].driver == "anv" and rows["c3-0160"].hw.driver == "anv"


def _overhead_s(driver):
    from tokspeed.predict import predict
    from tokspeed.timing import pass_time

    p = predict("tinyllama-1.1b", on_driver(get_hardware("rtx-4090"), driver), quant="Q4_0",
                engine="llama.cpp-vulkan", prompt=0, gen=1)
    return pass_time(p.decode_ops(), p.hw, p.engine_profile, p.quant, 1).overhead_s, p.engine_profile.fixed_s


def test_vulkan_on_nvidia_kernels_cost_the_cuda_graph_gap():
    import tomllib

    here = Path(__file__).resolve().parents[1] / "tokspeed" / "engines"
    fitted = tomllib.loads((here / "fitted.toml").read_text())
    priors = tomllib.loads((here / "priors.toml").read_text())
    drivers = tomllib.loads((here / "drivers.toml").read_text())["driver"]
    assert drivers["nvidia"]["kernel_cost_of"] == "llama.cpp-cuda" and "kernel_cost_of" not in drivers["nvk"]

    def launch(engine):     # the newest era's: fitted.toml's top entry over the prior
        return fitted.get(engine, {}).get("launch_s", priors[engine]["launch_s"])
    # the same decode pass, the same kernels, under the proprietary driver and under NVK (Mesa): the per-kernel
    # parts of the overhead stand as llama.cpp-cuda's newest per-kernel cost to the Vulkan backend's own; the step
    # cost is CUDA's newest under the proprietary driver, the Vulkan backend's own under NVK
    (own, fixed), (gap, fixed2) = _overhead_s("nvk"), _overhead_s("nvidia")
    assert fixed2 == fitted["llama.cpp-cuda"]["fixed_s"] != fixed
    # the Vulkan backend's own per-kernel cost as it answers on the 4090: its fit pooled toward its prior by the rows
    # of the device's architecture family (engines/pooling.py)
    own_launch = get_engine("llama.cpp-vulkan", on_driver(get_hardware("rtx-4090"), "nvk")).launch_s
    assert (gap - fixed2) / (own - fixed) == pytest.approx(launch("llama.cpp-cuda") / own_launch)


def test_the_fit_times_vulkan_on_nvidia_kernels_at_the_cuda_launch_cost_it_is_handed():
    # Vulkan decode rows on GeForce cards under the proprietary driver (kernel_cost_of = llama.cpp-cuda): the fit's
    # evaluator takes the per-kernel cost from the CUDA launch_s handed to it (launch_of), not from fitted.toml nor
    # from the Vulkan trial profile's own launch_s
    from dataclasses import replace

    from tokspeed.calibration import load_rows
    from tokspeed.calibration.fast import build, predict_rows
    from tokspeed.engines.profile import prior_profile
    from tokspeed.predict import predict
    from tokspeed.timing import pass_time

    rows = [r for r in load_rows() if r.id in ("r0242", "r0248", "c3-0300")]
    assert len(rows) == 3 and all(r.kind == "decode" and r.batch == 1 for r in rows)
    prof = prior_profile("llama.cpp-vulkan")
    at = {x: 1.0 / predict_rows(build(rows, launch_of={"llama.cpp-cuda": x}), prof) for x in (2e-6, 7e-6)}
    own = 1.0 / predict_rows(build(rows, launch_of={"llama.cpp-cuda": 2e-6}), replace(prof, launch_s=40e-6))
    assert own == pytest.approx(at[2e-6], rel=1e-12)
    for i, r in enumerate(rows):
        # the kernels of one decode step, from predict's pass (its overhead less fixed_s, over the launch it used)
        p = predict(r.model, r.hw, quant=r.quant, engine="llama.cpp-vulkan", prompt=0, gen=1)
        kernels = (pass_time(p.decode_ops(), p.hw, p.engine_profile, p.quant, 1).overhead_s
                   - p.engine_profile.fixed_s) / p.engine_profile.launch_s
        # seconds per token grow by the kernels x the 5 us more each costs
        assert at[7e-6][i] - at[2e-6][i] == pytest.approx(kernels * 5e-6, rel=1e-6), r.id


def test_explain_names_the_share_in_the_prompt_matmul_line():
    # explain's "how the prompt matmul rate comes about" says what part of the efficiency is the coopmat1 shaders'
    # (the R9700 under RADV has no coopmat2), and says nothing of it where coopmat2 runs (an RTX 4090's default driver)
    from tokspeed.explain.rates_text import matmul_how

    for name, driver, expect in (("radeon-ai-pro-r9700", "radv", True), ("rtx-4090", "nvidia", False)):
        hw = on_driver(get_hardware(name), driver)
        eng = get_engine("llama.cpp-vulkan", hw)
        line = matmul_how(compute_rate(hw, eng, "Q4_0", 512), hw, eng, "Q4_0", 512)
        assert ("coopmat1 shaders' share 0.679" in line) == expect, line
