"""What a kernel costs under each Vulkan driver (tokspeed/engines/kernel_cost.py ``launch_by_driver``): the value
fitted under the driver the answer runs, the backend's own launch cost under a driver without rows, CUDA's graph gap
under NVIDIA's; pooled toward the priors like every fitted cost; fitted only where decode rows ran under it."""

from dataclasses import replace

import pytest

from tokspeed.engines.kernel_cost import driver_launch_s, own_cost_drivers
from tokspeed.engines.pooling import blend
from tokspeed.engines.profile import EngineProfile, get_engine, prior_profile
from tokspeed.engines.tables import engine_entry
from tokspeed.hardware.catalog import get_hardware


@pytest.fixture(scope="module")
def r9700():
    return get_hardware("radeon-ai-pro-r9700")


def test_the_driver_the_answer_runs_picks_the_cost(r9700):
    prof = EngineProfile("llama.cpp-vulkan", launch_s=6e-6, launch_by_driver={"radv": 3e-6, "anv": 1.2e-5})
    assert driver_launch_s(prof, replace(r9700, driver="radv")) == 3e-6
    assert driver_launch_s(prof, r9700) == 3e-6                     # RADV: the Linux default for AMD
    assert driver_launch_s(prof, replace(r9700, driver="amdvlk")) == 6e-6         # no value of its own
    assert driver_launch_s(prof, get_hardware("arc-pro-b70")) == 1.2e-5           # Mesa ANV
    # NVIDIA's driver borrows CUDA's per-kernel cost whatever the Vulkan fit holds
    cuda = engine_entry("llama.cpp-cuda")[0]["launch_s"]
    assert driver_launch_s(replace(prof, launch_by_driver={"nvidia": 9e-6}), get_hardware("rtx-4090")) == cuda


def test_pooling_moves_each_drivers_cost_toward_the_prior():
    prior = EngineProfile("llama.cpp-vulkan", launch_s=6e-6)
    fitted = EngineProfile("llama.cpp-vulkan", launch_s=1e-5, launch_by_driver={"radv": 2e-6}, fitted=True)
    assert blend(prior, fitted, 0.75).launch_by_driver["radv"] == pytest.approx(0.25 * 6e-6 + 0.75 * 2e-6)
    assert blend(prior, fitted, 0.0).launch_by_driver == {}           # a family without rows: the prior's one cost


def test_only_vulkan_takes_its_drivers_apart():
    from tokspeed.calibration.rows import load_rows

    rows = load_rows()
    vk = [r for r in rows if not r.skip and r.engine == "llama.cpp-vulkan" and r.era == "2025"]
    # the R9700 pairs ran under RADV and AMDVLK, the Arc / Lunar Lake rows under Mesa ANV; NVIDIA's rows borrow CUDA's
    assert {"radv", "amdvlk", "anv"} <= set(own_cost_drivers("llama.cpp-vulkan", vk))
    assert "nvidia" not in own_cost_drivers("llama.cpp-vulkan", vk)
    cuda = [r for r in rows if not r.skip and r.engine == "llama.cpp-cuda"]
    assert own_cost_drivers("llama.cpp-cuda", cuda) == []


def test_the_shipped_fit_answers_each_driver_with_its_own_cost(r9700):
    entry = engine_entry("llama.cpp-vulkan")[0]
    own = entry.get("launch_by_driver") or {}
    if not own:
        pytest.skip("fitted.toml written without per-driver launch costs")
    radv = get_engine("llama.cpp-vulkan", replace(r9700, driver="radv"))
    assert radv.launch_s == pytest.approx(own["radv"], rel=0.1)        # RDNA4 has 54 rows: weight 54 / 56
    # AMD's Windows driver has no row: the backend's own launch cost, pooled toward the prior as the family is
    win = get_engine("llama.cpp-vulkan", replace(r9700, driver="amd-windows", os="windows"))
    assert win.launch_s != pytest.approx(own["radv"], rel=0.01)
    # a family with no rows (RDNA3): the prior's launch cost under any driver
    xtx = get_engine("llama.cpp-vulkan", get_hardware("rx-7900-xtx"))
    assert xtx.launch_s == pytest.approx(prior_profile("llama.cpp-vulkan").launch_s)
    # an older era runs its own launch cost, not the newest era's per driver
    assert engine_entry("llama.cpp-vulkan", "2024")[0].get("launch_by_driver", {}) == {}


def test_vulkan_on_nvidia_takes_cudas_step_cost_not_the_other_drivers_fit():
    # drivers.toml kernel_cost_of: under NVIDIA's driver a Vulkan step costs what CUDA's newest era's does (the same
    # driver submits and waits); under RADV it keeps the Vulkan fit's own, fitted on AMD and Intel rows
    from tokspeed.engines.kernel_cost import driver_fixed_s
    prof = EngineProfile("llama.cpp-vulkan", fixed_s=7.6e-4)
    cuda = engine_entry("llama.cpp-cuda")[0]["fixed_s"]
    assert driver_fixed_s(prof, get_hardware("rtx-4090")) == cuda
    assert driver_fixed_s(prof, get_hardware("rtx-4090"), {"llama.cpp-cuda": 1e-4}) == 1e-4    # as the fit hands it
    assert driver_fixed_s(prof, get_hardware("radeon-ai-pro-r9700")) == 7.6e-4
    assert get_engine("llama.cpp-vulkan", get_hardware("rtx-4090")).fixed_s == cuda
    assert get_engine("llama.cpp-cuda", get_hardware("rtx-4090")).fixed_s == pytest.approx(cuda, rel=0.05)
