"""What one kernel launch costs a llama.cpp backend under its GPU driver (``driver_launch_s``): the engine profile's
``launch_s``, or the per-kernel cost of the backend its driver names in drivers.toml (``kernel_cost_of``). Read by
``profile.with_driver`` (predict) and ``calibration.fast`` (the fit), so both time a row the same way."""

from __future__ import annotations

from .driver import kernel_cost_of
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
    that gap (1.7 us against 4.6-4.7 us for its eras without graphs); under the priors alone it is the CUDA prior's. Other drivers: the backend's own, no source
    measures theirs apart (the Vulkan fit's 2024 era, NVIDIA rows only, put ~0 on it; its 2025 era, mostly Intel
    rows, 11 us)."""
    of = kernel_cost_of(profile.name, hardware)
    if not of:
        return profile.launch_s
    if launch_of and of in launch_of:
        return float(launch_of[of])
    return float(engine_entry(of)[0].get("launch_s", profile.launch_s))
