"""What one kernel launch costs a llama.cpp backend under its GPU driver (``driver_launch_s``): the engine profile's
``launch_s`` or the value fitted under that driver (``launch_by_driver``), or the per-kernel cost of the backend its
driver names in drivers.toml (``kernel_cost_of``); and what one step costs it (``driver_fixed_s``), likewise borrowed
under such a driver. Read by ``profile.with_driver`` (predict) and ``calibration.fast`` (the fit), so both time a row
the same way."""

from __future__ import annotations

from .driver import api_of, kernel_cost_of, resolve
from .tables import engine_entry


def driver_launch_s(profile, hardware, launch_of: dict | None = None) -> float:
    """What one kernel costs ``profile``'s backend on ``hardware`` under its driver: ``profile.launch_s``, or, where
    the driver names a ``kernel_cost_of`` backend (drivers.toml: Vulkan on NVIDIA), that backend's newest era's:
    ``launch_of[backend]`` where given (the fit passes the value it has just fitted, so a refit does not depend on
    the fitted.toml a previous fit wrote), else the engine tables' (fitted.toml over priors.toml).

    ggml-vulkan records a pass's nodes into command buffers and submits them every 100 nodes or so, recording the
    next batch while the GPU runs the last (ggml-vulkan.cpp ``ggml_vk_graph_compute``: "Submit after enough work has
    accumulated, to overlap CPU cmdbuffer generation with GPU execution"; ``max_nodes_per_submit`` = 100); between
    dependent dispatches it records a pipeline barrier (``ggml_vk_sync_buffers``). No host call sits between two
    kernels: what each costs is the GPU front end's gap from one dispatch to the next, as under a replayed CUDA
    graph, on the same silicon. llama.cpp-cuda's newest era replays graphs (GGML_CUDA_GRAPHS: llama.cpp's
    CMakeLists.txt sets GGML_CUDA_GRAPHS_DEFAULT ON), so its per-kernel cost, fitted on 455 rows of NVIDIA GPUs, is
    that gap (1.7 us against 4.6-4.7 us for its eras without graphs); under the priors alone it is the CUDA prior's.

    Other drivers: the gap is the front end's and the driver's own (the barrier between dependent dispatches, the
    submit), so it is fitted per driver where the newest era has decode rows under it (``launch_by_driver``: Mesa ANV
    on Intel Xe2, RADV and AMDVLK on RDNA4) and is the backend's ``launch_s`` -- its priors' where no row fits it --
    under any other driver. One value for all of them put Intel's gap on AMD parts (11 us fitted on mostly Intel
    rows; the R9700 rows decode small models 30-57 % faster than that allows)."""
    borrowed = _borrowed(profile, hardware, "launch_s", launch_of)
    if borrowed is not None:
        return borrowed
    own = getattr(profile, "launch_by_driver", None) or {}
    d = resolve(profile.name, hardware) if own and hardware is not None else None
    return float(own[d.name]) if d is not None and d.name in own else profile.launch_s


def driver_fixed_s(profile, hardware, step_of: dict | None = None) -> float:
    """What one step (a pass's submission, the wait for it and the host's work per token) costs ``profile``'s backend
    on ``hardware``: ``profile.fixed_s``, or under a driver that names a ``kernel_cost_of`` backend (Vulkan on NVIDIA)
    that backend's newest era's (``step_of[backend]`` where the fit hands it over, else the engine tables'). The
    same driver and silicon submit and wait, and llama.cpp's host work per token is the backend's either way; the
    Vulkan fit's own step cost comes from AMD and Intel rows (RADV, AMDVLK, ANV) and would be another vendor's
    residual on an NVIDIA part (0.72 ms against CUDA's 0.15 ms on an RTX 4090)."""
    borrowed = _borrowed(profile, hardware, "fixed_s", step_of)
    return profile.fixed_s if borrowed is None else borrowed


def _borrowed(profile, hardware, field: str, given: dict | None) -> float | None:
    """``field`` of the backend ``profile``'s driver on ``hardware`` borrows its costs from (drivers.toml
    ``kernel_cost_of``): ``given[backend]`` where given, else its newest era's in the engine tables; None where the
    driver borrows none."""
    of = kernel_cost_of(profile.name, hardware)
    if not of:
        return None
    if given and of in given:
        return float(given[of])
    return float(engine_entry(of)[0].get(field, getattr(profile, field)))


def own_cost_drivers(engine: str, rows) -> list[str]:
    """The GPU drivers whose per-kernel cost the fit takes apart (``launch_by_driver``): a Vulkan backend's, where
    its decode ``rows`` ran under them and the driver borrows no other backend's cost (drivers.toml kernel_cost_of).
    Vulkan records a pass into command buffers, so what a kernel costs is the GPU's dispatch gap under that driver,
    not a host launch (tokspeed/engines/kernel_cost.py); the other backends launch from the host, one cost each."""
    if api_of(engine) != "vulkan":
        return []
    return sorted({r.driver for r in rows if r.kind == "decode" and r.driver and not kernel_cost_of(engine, r.hw)})
