"""Hardware: one device's vendor peaks, validated. Units are in the field names.

Peaks are vendor figures (dense, no 2:4 sparsity); what an engine achieves of them is the
engine model's business (``tokspeed.engines``), never folded in here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from ..derived import hash_once
from ..engines.driver import check_hardware_driver
from ..errors import UserError, did_you_mean
from ..units import GIB
from .arch import check_arch, check_matrix_units, default_matrix_units
from .arch_names import infer_arch, infer_memory_type

KINDS = ("gpu", "soc", "cpu", "accelerator")

# A CPU's int8 dot-product rate where its row does not state one (``int8_tops``): AVX2's. Without a signed
# int8 dot instruction, 32 u8 x s8 products take vpmaddubsw (into 16-bit pairs) then vpmaddwd (into 32-bit)
# on the FMA ports: 32 multiply-adds per two 256-bit instructions, 2 x the FP32 FMA rate in ops (4 x with
# AVX-512/AVX-VNNI vpdpbusd or Arm sdot, which do it in one).
CPU_INT8_PER_FP32_UNSTATED = 2.0


@hash_once
@dataclass(frozen=True)
class Hardware:
    id: str
    name: str
    kind: str                      # gpu | soc | cpu | accelerator (TPU, Gaudi)
    vendor: str
    # capacity as labelled, in GiB (2**30 B): a vendor's "80 GB" of device memory is 80 GiB (capacity_bytes)
    memory_gb: float
    bandwidth_gbps: float          # peak memory bandwidth, decimal GB/s
    fp16_tflops: float = 0.0       # dense FP16/BF16 tensor peak, FP32 accumulate (0 = unknown)
    fp8_tflops: float = 0.0
    int8_tops: float = 0.0
    fp32_tflops: float = 0.0       # non-tensor (CUDA core / vector / CPU SIMD) FP32
    memory_type: str = ""
    # the catalog FP16/FP8 figures are the FP32-accumulate rate, half the FP16-accumulate rate (GeForce, L40)
    fp16_accumulate_2x: bool = False
    # SoC: read bandwidth its CPU cluster reaches (the GPU reaches bandwidth_gbps); a multi-socket CPU: the one socket's
    # a NUMA-unaware CPU engine streams its weights from; 0 = unknown / neither
    cpu_bandwidth_gbps: float = 0.0
    cpu_bandwidth_band_pct: float = 0.0   # uncertainty of that figure (measured ~15 %, assumed ~40 %)
    cpu_fp32_tflops: float = 0.0   # SoC: its CPU cores' SIMD FP32 peak (what llama.cpp-cpu computes with)
    # CPU memory system or SoC: llama.cpp's default thread count there (physical cores; P-cores on Apple
    # silicon), the threads that meet at a barrier after every graph node; 0 = unknown
    cpu_threads: int = 0
    host_link: str = ""            # e.g. "PCIe 4.0 x16"
    host_link_gbps: float = 0.0    # per direction, decimal GB/s
    scale_up_gbps: float = 0.0     # GPU-to-GPU aggregate bidirectional as vendors print it (0 = none)
    tdp_w: float = 0.0
    release_year: int = 0
    usable_memory_gb: float = 0.0  # GiB; 0 -> derived (see usable_bytes)
    source: str = ""
    notes: str = ""                # the reference CSV's notes, starting with its [conf: ...] tag
    confidence: str = ""           # that tag's text: high | medium | low | DERIVED ...
    derived: tuple = ()            # "field: formula" for every value computed rather than copied
    aliases: tuple = field(default=(), compare=False)
    # the GPU / accelerator / CPU microarchitecture and the matrix units the part has (tokspeed.hardware.arch:
    # the accepted words); engine rules read these, never the name. None: read from the name (derived says so)
    arch: str | None = None
    matrix_units: tuple = ()
    # the GPU driver a llama.cpp backend runs under and the OS (tokspeed.engines.driver, drivers.toml); "" = the
    # OS default (linux; macos for Apple), said in the output as assumed
    driver: str = ""
    os: str = ""
    # this machine's fitted decode efficiency per measuring backend (`tokspeed measure --calibrate`),
    # carried by a probed profile: {"torch": {"eta_memory": ..., "overhead_s": ...}, ...}
    calibration: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UserError(f"hardware {self.id}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for f in ("memory_gb", "bandwidth_gbps"):
            v = getattr(self, f)
            # at least one byte (per second): below that every speed is 0 and every time infinite
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not (1e-9 <= v < 1e7):
                raise UserError(f"hardware {self.id}: {f} must be a positive number (at least one byte), got {v!r}")
        for f in ("fp16_tflops", "fp8_tflops", "int8_tops", "fp32_tflops", "host_link_gbps",
                  "scale_up_gbps", "tdp_w", "usable_memory_gb", "cpu_bandwidth_gbps", "cpu_bandwidth_band_pct",
                  "cpu_fp32_tflops"):
            v = getattr(self, f)
            # 0 = not known; else at least one unit per second (1 FLOP/s, 1 B/s): no infinite times
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not (v == 0 or 1e-12 <= v < 1e8):
                raise UserError(f"hardware {self.id}: {f} must be a non-negative number (0 if unknown, else at least 1e-12), got {v!r}")
        for f in ("id", "name", "vendor", "memory_type", "host_link", "source", "notes", "confidence", "driver", "os"):
            if not isinstance(getattr(self, f), str):
                raise UserError(f"hardware {self.id}: {f} must be a string, got {getattr(self, f)!r}")
        if isinstance(self.cpu_threads, bool) or not isinstance(self.cpu_threads, int) or not 0 <= self.cpu_threads < 100_000:
            raise UserError(f"hardware {self.id}: cpu_threads must be a whole number of threads (0 if unknown), "
                            f"got {self.cpu_threads!r}")
        if not isinstance(self.fp16_accumulate_2x, bool):
            raise UserError(f"hardware {self.id}: fp16_accumulate_2x must be true or false")
        if not self.id.strip() or not self.name.strip():
            raise UserError("hardware: id and name must not be empty")
        if not isinstance(self.release_year, int) or isinstance(self.release_year, bool) or self.release_year < 0:
            raise UserError(f"hardware {self.id}: release_year must be a year, got {self.release_year!r}")
        for f in ("aliases", "derived"):
            v = getattr(self, f)
            if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
                raise UserError(f"hardware {self.id}: {f} must be a list of strings")
            object.__setattr__(self, f, tuple(v))
        self._settle_arch()

        drv, os_name = check_hardware_driver(self.driver, self.os, self.vendor, f"hardware {self.id}")
        object.__setattr__(self, "driver", drv)
        object.__setattr__(self, "os", os_name)

    def _settle_arch(self) -> None:
        """Check a stated ``arch`` / ``matrix_units``; where none is stated, take what the name implies and the
        arch's usual units, and say so in ``derived`` (a guess is never silent)."""
        where = f"hardware {self.id}"
        arch, units = check_arch(self.arch, where), check_matrix_units(self.matrix_units, where)
        notes = []
        if arch is None:      # the name, else the id or an alias ("instinct-mi300x")
            for said in (self.name, *(x.replace("-", " ") for x in (self.id, *self.aliases))):
                arch = infer_arch(self.vendor, self.kind, said)
                if arch:
                    notes.append(f"arch: {arch}, ASSUMED from the name {said!r} (no arch stated)")
                    break
            else:
                if self.kind in ("gpu", "soc"):
                    notes.append("arch: unknown (none stated, and the name names no known part): the engine rules "
                                 "take the vendor's default")
        if not units and default_matrix_units(arch):
            units = default_matrix_units(arch)
            notes.append(f"matrix_units: {';'.join(units)}, the units every {arch} part has (none stated)")
        if not self.memory_type and self.kind == "gpu" and infer_memory_type(self.name):
            object.__setattr__(self, "memory_type", infer_memory_type(self.name))
            notes.append(f"memory_type: {self.memory_type}, ASSUMED from the name {self.name!r} (none stated)")
        object.__setattr__(self, "arch", arch)
        object.__setattr__(self, "matrix_units", units)
        if notes:
            object.__setattr__(self, "derived", self.derived + tuple(notes))

    # ---- derived -------------------------------------------------------------------------
    @property
    def bandwidth_bytes_s(self) -> float:
        return self.bandwidth_gbps * 1e9

    @property
    def capacity_bytes(self) -> float:
        """The memory in bytes: ``memory_gb`` GiB. DRAM and HBM come in powers of two per chip, so a label's
        "GB" of device memory is GiB (H100 "80 GB": nvidia-smi 81,559 MiB of 81,920 made; RTX 4090 "24 GB":
        12 x 16 Gbit); bandwidth's GB/s stays 10^9 B/s."""
        return self.memory_gb * GIB

    @property
    def apple_wired_share(self) -> float:
        """The share of an Apple SoC's RAM macOS lets the GPU wire by default (0 for any other device):
        Metal's ``recommendedMaxWorkingSetSize``, which llama.cpp and MLX take as their limit, is about 3/4 of
        RAM on machines with more than 36 GB and about 2/3 on smaller ones (llama.cpp ggml-metal logs and
        issues #1870, #2011 report e.g. 21.3 GB of 32 GB and 147 GB of 192 GB). The ``iogpu.wired_limit_mb``
        sysctl (macOS 14 and later; ``debug.iogpu.wired_limit`` before) raises it until the next boot."""
        if self.kind == "soc" and self.vendor.lower() == "apple" and not self.usable_memory_gb:
            return 0.75 if self.memory_gb > 36 else 2 / 3
        return 0.0

    @property
    def usable_bytes(self) -> float:
        """Memory a model may use: ``usable_memory_gb`` where stated; an Apple SoC: its GPU wired limit
        (``apple_wired_share`` of RAM); others: the label."""
        if self.usable_memory_gb:
            return self.usable_memory_gb * GIB
        return self.capacity_bytes * (self.apple_wired_share or 1.0)

    def usable_note(self) -> str:
        """Why the usable memory is what it is, in one sentence (shown beside the fit)."""
        gib = self.usable_bytes / GIB
        if self.apple_wired_share:
            share = "3/4" if self.apple_wired_share == 0.75 else "2/3"
            return (f"{gib:,.4g} GiB: macOS lets the GPU wire {share} of {self.memory_gb:,.4g} GB by default "
                    f"(`sudo sysctl iogpu.wired_limit_mb=N` raises it)")
        return f"{gib:,.4g} GiB: a label's \"GB\" of device memory is GiB"

    @property
    def matmul_flops(self) -> float:
        """Peak FLOP/s for the matrix work of a forward pass: tensor FP16 if known, else vector FP32."""
        return (self.fp16_tflops or self.fp32_tflops) * 1e12

    @property
    def vector_flops(self) -> float:
        return (self.fp32_tflops or self.fp16_tflops) * 1e12

    @property
    def cpu_int8_ops(self) -> float:
        """Int8 dot-product ops/s of a CPU (or a SoC's CPU-cluster view): ``int8_tops`` where stated (VNNI or
        sdot: 4 x the FP32 rate), else AVX2's 2 x the FP32 rate (``CPU_INT8_PER_FP32_UNSTATED``)."""
        return self.int8_tops * 1e12 if self.int8_tops else CPU_INT8_PER_FP32_UNSTATED * self.vector_flops

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where compute and memory time are equal (the roofline ridge)."""
        return self.matmul_flops / self.bandwidth_bytes_s if self.matmul_flops else 0.0

    @property
    def scale_up_per_direction_bytes_s(self) -> float:
        return self.scale_up_gbps / 2 * 1e9

    def cpu_cluster(self) -> "Hardware":
        """This SoC as its CPU cores see it (an engine running on the CPU, llama.cpp-cpu): the bandwidth the
        CPU cluster reaches (``cpu_bandwidth_gbps``) instead of the GPU's, and the CPU cores' SIMD FP32
        (``cpu_fp32_tflops``; 0 = prefill unknown) instead of the GPU's FLOP/s. Prefill then runs at the fractions of
        that SIMD FP32 peak llama.cpp's CPU kernels reach per weight format (priors.toml [CPUPP], measured on
        AVX2); quantized weights run int8 dot products, whose peak (up to 4x) is ``int8_tops``."""
        if not self.cpu_bandwidth_gbps:
            return self
        return replace(self, bandwidth_gbps=self.cpu_bandwidth_gbps, fp16_tflops=0.0, fp8_tflops=0.0,
                       fp32_tflops=self.cpu_fp32_tflops, fp16_accumulate_2x=False,
                       # llama.cpp's quantized CPU matmuls run int8 dot products (Arm SDOT, x86 VNNI): 4 int8
                       # MACs per FP32 lane, so 4x the FP32 rate in ops; here for a prefill model to use
                       int8_tops=4 * self.cpu_fp32_tflops,
                       derived=self.derived + (f"bandwidth_gbps: the CPU cluster's {self.cpu_bandwidth_gbps:g} GB/s "
                                               f"(the GPU's {self.bandwidth_gbps:g})",))

    def simd_view(self) -> "Hardware":
        """This CPU as llama.cpp's CPU kernels see it: FP32 SIMD and int8 dot products (priors.toml [CPUPP],
        [CPUMV]), not a 16-bit matrix-unit figure (a probe's torch BF16 matmul: oneDNN on AMX / AVX512-BF16).
        Unchanged where there is no FP32 figure to fall back on."""
        if self.kind != "cpu" or not self.fp32_tflops or not (self.fp16_tflops or self.fp8_tflops):
            return self
        return replace(self, fp16_tflops=0.0, fp8_tflops=0.0)

    def cpu_engine_view(self) -> "Hardware":
        """This device as a CPU engine (llama.cpp-cpu) sees it: a SoC's CPU cluster (``cpu_cluster``), a CPU's
        SIMD view (``simd_view``) -- on a multi-socket CPU at the one socket's bandwidth its weights sit in
        (``cpu_bandwidth_gbps``: llama.cpp without ``--numa``); anything else unchanged."""
        if self.kind == "soc" and self.cpu_bandwidth_gbps:
            return self.cpu_cluster()
        if self.kind == "cpu" and self.cpu_bandwidth_gbps and self.cpu_bandwidth_gbps < self.bandwidth_gbps:
            return replace(self.simd_view(), bandwidth_gbps=self.cpu_bandwidth_gbps,
                           derived=self.derived + (f"bandwidth_gbps: the {self.cpu_bandwidth_gbps:g} GB/s a CPU engine "
                                                   f"reaches (the machine's {self.bandwidth_gbps:g}: NUMA)",))
        return self.simd_view()

    @classmethod
    def from_dict(cls, data: dict) -> "Hardware":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"hardware {data.get('id', data.get('name', '?'))}: unknown field(s) {', '.join(unknown)}",
                            did_you_mean(unknown[0], sorted(known)) or "fields: " + ", ".join(sorted(known)))
        missing = [k for k in ("name", "kind", "vendor", "memory_gb", "bandwidth_gbps") if k not in data]
        if missing:
            raise UserError(f"hardware {data.get('id', data.get('name', '?'))}: missing {', '.join(missing)}")
        data = dict(data)
        data.setdefault("id", str(data["name"]).lower().replace(" ", "-"))
        return cls(**data)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["aliases"] = list(self.aliases)
        d["derived"] = list(self.derived)
        d["matrix_units"] = list(self.matrix_units)
        if d["arch"] is None:
            d.pop("arch")
        d.pop("calibration", None)
        return d
