"""The hardware profile a probe writes: a custom-hardware TOML (name, kind, vendor, memory_gb,
bandwidth_gbps = measured read bandwidth, fp16/fp32 TFLOP/s = measured matmul) with a [measured]
table holding every probe result and a [calibration.<backend>] table per fitted backend.

``tokspeed.hardware.catalog.hardware_from_toml`` loads the top-level keys as a Hardware; the two
tables are ignored there and read back here (``read_profile``, ``load_calibration``).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from ..toml_writer import dumps, sig6
from ..userfile import read_toml, write_text
from .detect import int8_dot_per_fp32, llama_threads


PROFILE_VERSION = 1


def dumps_toml(data: dict) -> str:
    """A profile as TOML text (the one writer: ``tokspeed.toml_writer``)."""
    return dumps(data, number=sig6)


# ---- building, reading, writing ---------------------------------------------------------------
def _unit_key(unit: str) -> str:
    return {"GB/s": "gbps", "TFLOP/s": "tflops"}[unit]


def measured_table(machine, results, threads: int, tool: str) -> dict:
    m = {"profile_version": PROFILE_VERSION,
         "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
         "tool": tool, "cpu_model": machine.cpu_model, "logical_cores": machine.logical_cores,
         "physical_cores": machine.physical_cores, "threads": threads, "ram_bytes": machine.ram_bytes,
         "os": machine.os}
    if machine.gpus:
        m["gpu_model"] = machine.gpus[0].name
        m["gpu_count"] = len(machine.gpus)
    for r in results:
        m[f"{r.name}_{_unit_key(r.unit)}"] = r.value
        m[f"{r.name}_spread"] = r.timing.spread
        m[f"{r.name}_repeats"] = r.timing.repeats
    return m


def build_profile(machine, results, threads: int, tool: str = "tokspeed probe") -> dict:
    """The profile as a dict. On a machine with a probed CUDA GPU the device is the GPU
    (kind gpu, VRAM, on-device bandwidth, host link measured); otherwise the CPU and its RAM."""
    by = {r.name: r.value for r in results}
    on_gpu = "gpu_read" in by and machine.gpus
    if on_gpu:
        g = machine.gpus[0]
        hw = {"name": f"{g.name} (measured)", "kind": "gpu", "vendor": "NVIDIA",
              "memory_gb": round(g.memory_bytes / 2**30, 3), "bandwidth_gbps": round(by["gpu_read"], 2),
              "fp16_tflops": round(by.get("gpu_matmul_fp16", by.get("gpu_matmul_bf16", 0.0)), 3),
              "fp32_tflops": round(by.get("gpu_matmul_fp32", 0.0), 3)}
        if "gpu_h2d_pinned" in by:
            hw["host_link_gbps"] = round(by["gpu_h2d_pinned"], 2)
    else:
        kind = "soc" if machine.apple_chip else "cpu"
        hw = {"name": f"{machine.cpu_model} ({machine.physical_cores} cores, measured)", "kind": kind,
              "vendor": "Apple" if machine.apple_chip else machine.vendor,
              "memory_gb": round(machine.ram_bytes / 2**30, 3), "bandwidth_gbps": round(by["cpu_read"], 2),
              "fp16_tflops": round(by.get("cpu_matmul_bf16", 0.0), 4),
              "fp32_tflops": round(by.get("cpu_matmul_fp32", 0.0), 4),
              # llama.cpp's threads meet at a barrier after every graph node (priors.toml [BARRIER])
              "cpu_threads": llama_threads(bool(machine.apple_chip))}
        k = int8_dot_per_fp32(bool(machine.apple_chip))
        if k and hw["fp32_tflops"]:   # llama.cpp's CPU decode runs int8 dot products (priors.toml [CPUMV])
            hw["int8_tops"] = round(k * hw["fp32_tflops"], 4)
    hw["source"] = f"measured by {tool}"
    hw["notes"] = ("bandwidth_gbps is the measured read bandwidth (median); fp16_tflops is the measured "
                   "bf16/fp16 matmul, fp32_tflops the fp32 matmul; all probe results in [measured]"
                   + ("; int8_tops = the CPU's int8 dot products per FP32 FLOP (its instruction set: 4 with "
                      "VNNI or sdot, 2 with AVX2) x fp32_tflops" if "int8_tops" in hw else ""))
    hw["measured"] = measured_table(machine, results, threads, tool)
    hw["calibration"] = {}
    return hw


def write_profile(profile: dict, path) -> Path:
    return write_text(path, dumps_toml(profile), "profile")


def read_profile(path) -> dict:
    return read_toml(path, "hardware profile", "run `tokspeed probe` first")[1]
