"""EngineProfile: an engine's efficiency model, from physical terms that transfer to unseen devices.

Time of one forward pass (``tokspeed.predict.pass_time``)::

    t = Σ_ops max(flops / (peak · eta_compute), bytes / (bandwidth · eta_mem · eta_format))
        + kernels · launch_s + fixed_s

- ``eta_mem``: fraction of peak bandwidth reached streaming weights (per hardware kind).
- ``eta_format``: relative cost of dequantising a weight format in the matvec kernels (F16 = 1).
- ``eta_kv``: fraction of bandwidth reached reading the KV cache (attention over a long context).
- ``eta_compute``: fraction of the dense FP16 tensor peak reached in prefill matmuls.
- ``launch_s``: cost per kernel launch (or per graph node), times kernels per token from the ledger.
- ``fixed_s``: per step (sampling on the CPU, synchronisation, loop control).

Values come from ``fitted.toml`` (written by ``scripts/fit_calibration.py`` on
``shared/validation/calibration.csv``) where an engine has calibration rows, else from the documented
priors in ``priors.toml``, which also carry a wider error band.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import UserError, did_you_mean

HERE = Path(__file__).parent
ENGINES = ["ideal", "llama.cpp", "llama.cpp-cuda", "llama.cpp-metal", "llama.cpp-vulkan", "llama.cpp-cpu",
           "gpt-fast", "vllm", "tensorrt-llm", "transformers", "exllamav2", "mlx"]


@dataclass(frozen=True)
class EngineProfile:
    name: str
    eta_mem: dict = field(default_factory=lambda: {"default": 1.0})      # by hardware kind
    eta_compute: dict = field(default_factory=lambda: {"default": 1.0})  # by hardware kind
    eta_format: dict = field(default_factory=dict)                       # by format group
    eta_kv: float = 1.0
    launch_s: float = 0.0
    fixed_s: float = 0.0
    runtime_overhead_gib: float = 0.0
    decode_error_pct: float = 0.0     # typical |error| (p90 of the fit, or the prior's band)
    prefill_error_pct: float = 0.0
    fitted: bool = False
    source: str = ""

    def mem_eff(self, hw_kind: str) -> float:
        return self.eta_mem.get(hw_kind, self.eta_mem.get("default", 1.0))

    def compute_eff(self, hw_kind: str) -> float:
        return self.eta_compute.get(hw_kind, self.eta_compute.get("default", 1.0))

    def format_eff(self, quant: str) -> float:
        return self.eta_format.get(format_group(quant), 1.0)

    @property
    def is_ideal(self) -> bool:
        return self.name == "ideal"


def format_group(quant: str) -> str:
    """Weight formats grouped by the kind of dequantisation their kernels do."""
    q = quant.upper()
    if q in ("F32", "F16", "BF16", "FP16"):
        return "float"
    if q in ("Q8_0", "INT8", "FP8"):
        return "q8"
    if q in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"):
        return "legacy"
    if q == "MXFP4":
        return "mxfp4"
    if q.startswith(("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ")):
        return "kquant"
    return "int4"


IDEAL = EngineProfile("ideal", source="roofline bound: eta = 1, no overhead (the seeds' formula)")


@lru_cache(maxsize=1)
def _tables() -> dict:
    data = {}
    for fname in ("priors.toml", "fitted.toml"):
        p = HERE / fname
        if p.is_file():
            with open(p, "rb") as f:
                for name, entry in tomllib.load(f).items():
                    data[name] = {**data.get(name, {}), **entry}
    return data


def resolve_backend(engine: str, hardware) -> str:
    """``llama.cpp`` picks its backend from the hardware: CUDA on NVIDIA GPUs, Metal on Apple,
    Vulkan on other GPUs, CPU on CPU memory systems."""
    e = engine.strip().lower()
    if e != "llama.cpp":
        return e
    vendor = hardware.vendor.lower()
    if hardware.kind == "accelerator":
        raise UserError(f"llama.cpp has no backend for {hardware.name}",
                        "use --engine vllm (or ideal for the roofline bound)")
    if hardware.kind == "cpu":
        return "llama.cpp-cpu"
    if vendor == "apple":
        return "llama.cpp-metal"
    if vendor == "nvidia":
        return "llama.cpp-cuda"
    return "llama.cpp-vulkan"


def get_engine(engine: str, hardware=None) -> EngineProfile:
    e = engine.strip().lower()
    if e not in ENGINES:
        raise UserError(f"unknown engine {engine!r}", did_you_mean(e, ENGINES) or "choose one of " + ", ".join(ENGINES))
    if e == "llama.cpp" and hardware is not None:
        e = resolve_backend(e, hardware)
    if e == "ideal":
        return IDEAL
    entry = _tables().get(e)
    if entry is None:
        e = "llama.cpp-cuda" if e == "llama.cpp" else e
        entry = _tables()[e]
    return EngineProfile(name=e, **entry)
