"""Engines people use in 2026: ik_llama.cpp (CPU, CUDA) and mlx-lm."""

import pytest

from tokspeed.engines.compat import check, engine_key, supported_formats
from tokspeed.engines.profile import ENGINES, get_engine
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware


def test_names():
    assert engine_key("mlx-lm") == "mlx" and engine_key("MLX LM") == "mlx"
    assert engine_key("ik_llama.cpp (CUDA)") == "ik_llama.cpp-cuda"
    assert {"ik_llama.cpp-cpu", "ik_llama.cpp-cuda"} <= set(ENGINES)


def test_ik_types_only_on_the_fork():
    gpu = get_hardware("rtx-4090")
    assert check("ik_llama.cpp-cuda", gpu, "IQ4_KS") == "ik_llama.cpp-cuda"
    assert "IQ2_KT" in supported_formats("ik_llama.cpp-cuda", gpu)
    with pytest.raises(UserError, match="cannot load IQ4_KS"):
        check("llama.cpp-cuda", gpu, "IQ4_KS")


def test_ik_cuda_takes_mainline_decode_kernels():
    ik, main = get_engine("ik_llama.cpp-cuda"), get_engine("llama.cpp-cuda")
    assert ik.eta_mem == main.eta_mem and ik.bytes_per_core_cycle == main.bytes_per_core_cycle
    assert ik.decode_error_pct >= main.decode_error_pct       # a prior: its band is wider than the fit's


def test_mlx_runs_mlx_formats_on_apple_only():
    mac = get_hardware("m2-max-38")
    assert check("mlx-lm", mac, "MLX-4BIT") == "mlx"
    with pytest.raises(UserError):
        check("mlx", get_hardware("rtx-4090"), "MLX-4BIT")
