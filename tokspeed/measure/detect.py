"""What hardware this is: CPU model, cores, RAM; NVIDIA GPUs through torch (or NVML); Apple chips via sysctl."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import asdict, dataclass, field


@dataclass
class GpuInfo:
    index: int
    name: str
    memory_bytes: int
    free_bytes: int = 0
    compute_capability: str = ""


@dataclass
class MachineInfo:
    cpu_model: str
    vendor: str
    logical_cores: int
    physical_cores: int
    ram_bytes: int
    available_ram_bytes: int
    os: str
    apple_chip: str = ""
    gpus: list[GpuInfo] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _sysctl(name: str) -> str:
    try:
        return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> tuple[str, str]:
    """(model name, vendor) from /proc/cpuinfo, sysctl on macOS, or platform."""
    if platform.system() == "Darwin":
        brand = _sysctl("machdep.cpu.brand_string")
        return brand or platform.processor(), "Apple" if "Apple" in brand else "Intel"
    model, vendor = "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = val.strip()
                elif key == "vendor_id" and not vendor:
                    vendor = val.strip()
    except OSError:
        pass
    vendor = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}.get(vendor, vendor)
    return model or platform.processor() or platform.machine(), vendor or "unknown"


def _ram() -> tuple[int, int]:
    try:
        import psutil  # lazy: optional dependency (psutil, the measure extra)

        vm = psutil.virtual_memory()
        return int(vm.total), int(vm.available)
    except ImportError:
        pass
    if platform.system() == "Darwin":
        total = int(_sysctl("hw.memsize") or 0)
        return total, total
    info = {}
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                k, _, v = line.partition(":")
                info[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0, 0
    return info.get("MemTotal", 0), info.get("MemAvailable", info.get("MemFree", 0))


def llama_threads(apple: bool) -> int:
    """llama.cpp's default thread count on this machine (common.cpp cpu_get_num_math): the performance
    cores on Apple silicon (sysctl hw.perflevel0.physicalcpu), else the physical cores (psutil); 0 where
    it cannot be told (no psutil: os.cpu_count() counts SMT threads twice)."""
    if apple:
        try:
            return int(_sysctl("hw.perflevel0.physicalcpu") or 0)
        except ValueError:
            return 0
    try:
        import psutil  # lazy: optional dependency (psutil, the measure extra)

        return int(psutil.cpu_count(logical=False) or 0)
    except ImportError:
        return 0


def _cpuinfo_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The CPU feature flags of /proc/cpuinfo (x86 ``flags``, Arm ``Features``); empty where there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(val.split())
    except OSError:
        pass
    return set()


def int8_dot_per_fp32(apple: bool = False) -> int:
    """Int8 dot-product ops per FP32 FLOP of this CPU's SIMD units, from its instruction set: 4 with a one-
    instruction int8 dot product (x86 AVX-512 VNNI / AVX-VNNI vpdpbusd, Arm sdot: 4 multiply-adds per 32-bit
    lane), 2 with AVX2 alone (vpmaddubsw + vpmaddwd), 0 where it cannot be told. llama.cpp's CPU decode
    kernels run on these (priors.toml [CPUMV]); `tokspeed probe` writes int8_tops from it."""
    if apple:
        return 4 if _sysctl("hw.optional.arm.FEAT_DotProd") == "1" else 0
    flags = _cpuinfo_flags()
    if flags & {"avx512_vnni", "avx_vnni", "asimddp"}:
        return 4
    return 2 if "avx2" in flags else 0


def _physical_cores() -> int:
    try:
        import psutil  # lazy: optional dependency (psutil, the measure extra)

        return psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except ImportError:
        return os.cpu_count() or 1


def nvidia_gpus() -> list[GpuInfo]:
    """CUDA devices through torch; through NVML (pynvml) when torch has no CUDA."""
    out = []
    try:
        import torch  # lazy: optional dependency (torch, the measure extra)

        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                free, _total = torch.cuda.mem_get_info(i)
                out.append(GpuInfo(i, p.name, int(p.total_memory), int(free), f"{p.major}.{p.minor}"))
            return out
    except ImportError:
        pass
    try:
        import pynvml  # lazy: optional dependency (pynvml, the measure extra)

        pynvml.nvmlInit()
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            name = pynvml.nvmlDeviceGetName(h)
            out.append(GpuInfo(i, name.decode() if isinstance(name, bytes) else name, int(mem.total), int(mem.free)))
    except Exception:  # no NVML, no driver: no NVIDIA GPU to report
        pass
    return out


def detect() -> MachineInfo:
    model, vendor = _cpu_model()
    total, avail = _ram()
    apple = model if platform.system() == "Darwin" and "Apple" in model else ""
    return MachineInfo(
        cpu_model=model, vendor=vendor, logical_cores=os.cpu_count() or 1, physical_cores=_physical_cores(),
        ram_bytes=total, available_ram_bytes=avail, os=f"{platform.system()} {platform.release()}",
        apple_chip=apple, gpus=nvidia_gpus(),
    )


def free_memory_bytes(device: str = "cpu") -> int:
    """Memory a new allocation can take now: available RAM, or free VRAM on a CUDA device."""
    if device.startswith("cuda"):
        import torch  # lazy: optional dependency (torch, the measure extra)

        idx = int(device.split(":")[1]) if ":" in device else 0
        return int(torch.cuda.mem_get_info(idx)[0])
    return _ram()[1]
