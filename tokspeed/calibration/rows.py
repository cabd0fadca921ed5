"""Load ``calibration.csv`` into rows that ``tokspeed.predict.predict`` can be evaluated on.

Each row carries its own ``Hardware`` built from the row's columns (name, kind, vendor, bandwidth,
FP16 peak, memory), so a fit on these rows does not depend on the hardware catalog. Rows that cannot
be scored keep a ``skip`` reason instead of being dropped, so every line of the file is accounted for.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from ..engines.backends import backend_view
from ..engines.compat import engine_key
from ..engines.cpu import note_threads, with_numa, with_threads
from ..engines.driver import VENDOR_OS, entry, resolve
from ..engines.eras import build_month, era_family, era_of
from ..engines.memory import memory_class
from ..engines.profile import ENGINES
from ..errors import UserError
from ..guard.typed import rate
from ..hardware.catalog import get_hardware
from ..hardware.match import closest_device
from ..hardware.spec import Hardware
from ..models.catalog import get_model, resolve_id
from ..quant.dynamic import split_size
from ..quant.schemes import canonical, scheme_for
from ..workload import MAX_TOKENS, NBATCH, UBATCH
from .row_cells import cell_count, cell_number, gated, note_count, too_many_passes
from .families import device_family
from .split_rows import stages_in_turn
from .series import mark_rising_series

REPO = Path(__file__).resolve().parents[2]
# the repository's copy of the published measurements (data/validation/README.md describes the columns)
REPO_CSV = REPO / "data" / "validation" / "calibration.csv"
# the third tranche (AMD, Intel, CPUs, ik_llama.cpp, MoE, depth sweeps): same columns, calibration-3-sources.md
REPO_CSV3 = REPO / "data" / "validation" / "calibration-3.csv"
CALIBRATION_CSVS = (REPO_CSV, REPO_CSV3)


def default_csv() -> Path:
    """``$TOKSPEED_CALIBRATION_CSV``, else the repository's ``data/validation/calibration.csv``."""
    env = os.environ.get("TOKSPEED_CALIBRATION_CSV")
    return Path(env) if env else REPO_CSV


DEFAULT_CSV = default_csv()

# A decode row whose generated-token count is unstated: llama-bench's default -n 128.
DEFAULT_GEN = 128
# Capacity does not enter a speed prediction; rows that leave it blank get this placeholder
# (Hardware requires a positive capacity) so the memory budget never reports "does not fit".
UNSTATED_MEMORY_GB = 1e6

SKIP_FLAGS = ("DUPLICATE_OF", "PARTIAL_CPU_OFFLOAD", "HOST_CONTENTION")
# flags that describe the run without taking it out: flash attention on; several devices (n_devices says how many);
# experts in host memory (always with PARTIAL_CPU_OFFLOAD, which skips the row)
INFO_FLAGS = ("FA", "MULTI_GPU", "MOE_CPU")
METRICS = ("decode", "prefill", "decode_aggregate")


@dataclass(frozen=True)
class CalibrationRow:
    id: str
    source: str
    hw: Hardware
    family: str
    n_devices: int
    model: str
    quant: str              # canonical tokspeed quant name (INT8, INT4-G32, Q4_K_M, ...)
    engine: str             # llama.cpp-cuda | llama.cpp-metal | llama.cpp-vulkan | gpt-fast
    metric: str             # decode | prefill | decode_aggregate
    prompt: int
    gen: int
    context: int
    batch: int
    tok_s: float
    confidence: str
    flags: str
    skip: str = ""          # why the row is not scored ("" = scored)
    date: str = ""          # YYYY-MM of the measurement (or of its source)
    build: str = ""         # llama.cpp build number or commit, where printed
    era: str = ""           # the engine era the row measures (tokspeed/engines/eras.toml; "" = none)
    month: str = ""         # the year-month of the build it ran (``row_month``; "" = unknown or no eras)
    parallel: str = "none"  # how n_devices > 1 split the model: layer-split | tp (data/validation/README.md)
    model_bytes: float = 0.0   # the weight file's size where the source states it (bytes), else 0
    driver: str = ""        # the GPU driver it ran under: named in its note, else the OS default ("" = no choice)
    ubatch: int = UBATCH    # llama.cpp -ub its note states, else llama-bench's default
    n_batch: int = NBATCH   # llama.cpp -b its note states, else llama-bench's default

    @property
    def flash_attention(self) -> bool | None:
        """True where the row says flash attention was on (flag ``FA``), else None (the build's default)."""
        return True if "FA" in row_flags(self.flags) else None

    @property
    def kind(self) -> str:
        """``decode`` or ``prefill``: decode_aggregate rows are scored as decode (aggregate tok/s)."""
        return "prefill" if self.metric == "prefill" else "decode"


def _int(text: str, default: int | None = None) -> int | None:
    """A gated count cell (``row_cells.gated``) as an int; ``default`` when blank."""
    v = cell_count(text)
    return v if isinstance(v, int) else default


def _float(text: str, default: float = 0.0) -> float:
    """A gated number cell as a float; ``default`` when blank."""
    v = cell_number(text)
    return v if isinstance(v, float) else default


def measured_rate(text: str) -> float:
    """A row's tok/s through the typed gate (``guard.typed.rate``): a finite number > 0, else NaN (the row is then
    skipped, ``_skip_reason``), never an exception or an infinity."""
    try:
        v = rate(float(text.strip()))
    except (ValueError, OverflowError):
        return math.nan
    return v if v else math.nan


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def row_hardware(r: dict) -> Hardware:
    """The row's device from its own columns; the memory technology (which the CSV does not state) is the catalog
    entry's where the device has one (an AMD Instinct MI50 is HBM2 whatever its row calls it), else
    ``tokspeed.engines.memory.memory_class`` of the name and kind (HBM parts by name). A row without an
    FP16 peak takes the catalog's (a vendor figure, or one derived as units x clock x FLOPs per unit
    with its derivation in the catalog), so its prefill is scored. What the CSV has no column for comes from the
    catalog (``CATALOG_FIELDS``): the FP32 figure (cores x clock), board power, the GeForce flag, and a SoC's or CPU's
    view for a CPU engine -- the bandwidth its CPU cluster reaches, its SIMD FP32 and int8 figures, its threads."""
    known = {f: _catalog_value(r, f) for f in CATALOG_FIELDS}
    # the device's kind is the catalog's: an Apple SoC run CPU-only (a row's hardware_kind "cpu") is still a SoC,
    # whose CPU cluster (``Hardware.cpu_cluster``: its bandwidth and SIMD figures) the CPU engine runs on
    kind = _catalog_value(r, "kind") or r["hardware_kind"].strip()
    hw = Hardware(id=_slug(r["hardware"]), name=r["hardware"], kind=kind,
                  vendor=r["vendor"].strip(), memory_gb=_float(r["memory_GB"], UNSTATED_MEMORY_GB),
                  bandwidth_gbps=_float(r["bandwidth_GBps"]), fp16_tflops=_row_fp16_tflops(r),
                  source=f"calibration.csv row {r['id']}", **{f: v for f, v in known.items() if v})
    return replace(hw, memory_type=memory_class(hw).upper())


# a row's device fields that the CSV does not carry, taken from its catalog entry (where found)
CATALOG_FIELDS = ("fp16_accumulate_2x", "fp32_tflops", "tdp_w", "int8_tops", "cpu_bandwidth_gbps",
                  "cpu_bandwidth_band_pct", "cpu_fp32_tflops", "cpu_threads", "arch", "matrix_units", "memory_type")


def _row_fp16_tflops(r: dict) -> float:
    """The row's FP16 dense peak: its own column, else the catalog's figure for the device, else 0 -- and at least
    the catalog's FP32 figure where the FP16 one is below it (Pascal GP102 runs FP16 at 1/64 of FP32, and llama.cpp
    multiplies F16 weights in FP32 there: the matmul peak is the FP32 one)."""
    fp16 = _float(r["fp16_TFLOPS"]) or float(_catalog_value(r, "fp16_tflops") or 0.0)
    return max(fp16, float(_catalog_value(r, "fp32_tflops") or 0.0)) if fp16 else 0.0


def _cpu_simd_peak(r: dict) -> float:
    """A CPU's (or a CPU engine's) matmul peak: the catalog's SIMD FP32 figure (cores x clock x FLOPs per cycle), what
    llama.cpp's CPU kernels compute with (``Hardware.simd_view``); a CPU lists no FP16 peak, 0 for anything else."""
    if r["hardware_kind"].strip() != "cpu" and "cpu" not in engine_key(r["engine"]):
        return 0.0
    if _catalog_value(r, "kind") == "soc":     # a SoC's own FP32 figure is its GPU's
        return float(_catalog_value(r, "cpu_fp32_tflops") or 0.0)
    return float(_catalog_value(r, "fp32_tflops") or 0.0)


# a row note's words for the driver and the OS it ran under (data/validation/calibration-3-sources.md): the first
# match of each list wins; a note that names none runs under the OS default (tokspeed.engines.driver)
NOTE_DRIVERS = (("nvidia-cm1", r"\bKHR_coopmat\b|without coopmat2"),      # coopmat1 on NVIDIA (drivers.toml)
                ("amdvlk", r"\bAMDVLK\b"), ("radv", r"\bRADV\b"), ("anv", r"\bANV\b"), ("nvk", r"\bNVK\b"),
                ("moltenvk", r"\bMoltenVK\b"), ("rocm-7", r"\bROCm 7\b"), ("rocm-6", r"\bROCm 6\b"),
                ("level-zero", r"\blevel_zero\b"))
NOTE_OSES = (("windows", r"\bWindows\b(?!/)"), ("linux", r"(?<!/)\bLinux\b|\bFedora\b|\bUbuntu\b"),
             ("macos", r"\bmacOS\b"))


def with_row_driver(hw: Hardware, note: str) -> Hardware:
    """``hw`` with the driver and OS a row's note names ("Vulkan RADV (Mesa)", "Vulkan AMDVLK", "ROCm 7.1.1",
    "Windows"), where they fit the device's vendor ("Windows/Linux driver not stated" names neither)."""
    os_name = next((o for o, pat in NOTE_OSES if re.search(pat, note or "")), "")
    if VENDOR_OS.get((hw.vendor or "").lower(), os_name) != os_name:   # a table's "Linux" over a Mac's row
        os_name = ""
    vendor = (hw.vendor or "").lower()       # the first driver named that drives this vendor's GPUs
    drv = next((d for d, pat in NOTE_DRIVERS if re.search(pat, note or "") and vendor in entry(d)["vendors"]), "")
    if drv and os_name and os_name not in entry(drv)["os"]:
        os_name = ""
    return replace(hw, driver=drv, os=os_name) if drv or os_name else hw


# llama-bench / llama-cli options a note states that predict takes: -ub / --ubatch-size, -b / --batch-size, --numa
NOTE_UBATCH = re.compile(r"(?:^|\s)(?:-ub|--ubatch-size|n_ubatch)[ =](\d+)\b")
NOTE_NBATCH = re.compile(r"(?:^|\s)(?:-b|--batch-size)[ =](\d+)\b")
NOTE_NUMA = re.compile(r"--numa[ =](distribute)\b")


def note_option(pattern: re.Pattern, note: str, default):
    """The value of a llama.cpp option a row's note states (``-ub 2048``), else ``default``."""
    m = pattern.search(note or "")
    return type(default)(m.group(1)) if m and default is not None else (m.group(1) if m else default)


def row_driver(engine: str, hw: Hardware) -> str:
    """The driver a row's backend ran under (``tokspeed.engines.driver.resolve``), "" where it has no choice."""
    try:
        d = resolve(engine, hw)
    except UserError:               # a driver its note names that the row's backend does not use
        return ""
    return d.name if d else ""


def row_era(engine: str, date: str, build: str) -> str:
    """The engine era of a row: from its date, else its build number, else "" (and "" for engines
    without eras)."""
    if not era_family(engine):
        return ""
    m = re.match(r"\s*(\d+)\b", build.split("(")[-1]) if build else None
    if date.strip():
        return era_of(engine, date.strip())
    if m:
        return era_of(engine, m.group(1))
    return ""


def row_month(engine: str, date: str, build: str) -> str:
    """The year-month of the build a row ran, as ``row_era`` reads it: its date (the build is of that month or a little
    older), else its build number's month (the anchors of ``eras.toml``), else "" (and "" for engines without eras).
    The kernels that changed within an era by month (``backends.HIP_FA_MMA_SINCE``, ``cpu_kernels.REPACK`` /
    ``FA_TILED_SINCE``) are chosen by it."""
    if not era_family(engine):
        return ""
    if date.strip():
        return date.strip()
    m = re.match(r"\s*(\d+)\b", build.split("(")[-1]) if build else None
    return build_month(engine, int(m.group(1))) if m else ""


def _catalog_value(r: dict, field: str):
    """A field of the row's device from the hardware catalog: a capability (``fp16_accumulate_2x``) or a figure the
    CSV does not carry (``fp32_tflops``, for the core clock rate; ``tdp_w``). The device is the catalog's entry of that
    name (every device of the shipped CSV has one), else the one the name most likely is given the row's bandwidth
    and memory (``tokspeed.hardware.match``: "NVIDIA B200", "NVIDIA H100 80GB HBM3"); None where there is none."""
    hw = _row_device(r["hardware"], _float(r.get("bandwidth_GBps", "")), _float(r.get("memory_GB", "")))
    return getattr(hw, field) if hw is not None else None


@lru_cache(maxsize=4096)      # called once per field per row: a catalog scan per distinct device
def _row_device(name: str, bandwidth_gbps: float, memory_gb: float):
    try:
        return get_hardware(name)
    except UserError:
        return closest_device(name, bandwidth_gbps, memory_gb)


def map_quant(text: str) -> str:
    """``INT8 (weight-only)`` -> ``INT8``; other names through ``tokspeed.quant.schemes.canonical``."""
    return canonical(re.sub(r"\s*\(weight-only\)\s*$", "", text.strip(), flags=re.I))


def sized_quant(quant: str, model_bytes: str) -> str:
    """An Unsloth ``UD-*`` quant at the row's stated file size (``UD-Q4_K_XL@22827751178B``): its per-tensor mix is
    not published as a rule, the file's size is (tokspeed.quant.dynamic); any other quant as given."""
    size = _float(model_bytes)
    return f"{quant}@{size:.0f}B" if quant.startswith("UD-") and size else quant


# skips that keep a row out of the fit and its held-out scores while predict answers it
ANSWERED_NOT_FITTED = ("multi-device", "per-layer streams")


def _streams_not_fitted(model: str) -> str:
    """Why a model's rows stay out of the fit though answered: Gemma 3n's per-layer inputs, AltUp and LAuReL are
    counted node by node from the llama.cpp graph, unmeasured; fitted, their rows (two MI50s' 4) pulled ROCm's Q8_0
    DP4A prompt efficiency down 18 % and its per-kernel cost up 6 % for every model of the backend."""
    mid = resolve_id(model, packaging=True)
    if mid and get_model(mid).has_per_layer_streams:
        return "per-layer streams (Gemma 3n): answered, not fitted (their node costs are counted, not measured)"
    return ""


def _skip_reason(r: dict, quant: str, prompt, gen, ubatch: int, n_batch: int, era: str) -> str:
    for flag in row_flags(r["flags"]):
        if flag in SKIP_FLAGS:
            return flag
        if flag not in INFO_FLAGS:
            return f"unknown flag {flag}"
    if math.isnan(measured_rate(r["tok_s"])):
        return "tok_s not a finite rate > 0"
    if r["metric"] not in METRICS:
        return f"metric {r['metric']}"
    if engine_key(r["engine"]) not in ENGINES:
        return f"engine {r['engine']} unknown"
    if resolve_id(r["model"], packaging=True) is None:
        return "model not in catalog"
    try:
        scheme_for(split_size(quant)[0])          # the format alone: a stated size needs the model
    except ValueError:
        return f"quant {r['quant']} unknown"
    if r["metric"] == "prefill":
        if not prompt:
            return "prompt length unstated"
        if (many := too_many_passes(prompt, ubatch, n_batch)):
            return many
        if not _row_fp16_tflops(r) and not _cpu_simd_peak(r):
            return "no FP16 peak (prefill not scored)"
    if _int(r["n_devices"], 1) > 1 and not stages_in_turn(
            engine_key(r["engine"]), r.get("parallel", "").strip(), _int(r["n_devices"], 1), r["metric"].strip(),
            prompt or 0, _int(r["batch"], 1), ubatch, n_batch, era):
        return "multi-device"     # answered by predict, not fitted (split_rows: the layer splits the fit takes)
    return _streams_not_fitted(r["model"])


def row_flags(text: str) -> list[str]:
    """The flag names of a row's ``flags`` column (``MULTI_GPU|FA``; ``DUPLICATE_OF=r0123`` -> ``DUPLICATE_OF``)."""
    return [f.split("=")[0].strip() for f in text.split("|") if f.strip()]


def _model_id(name: str) -> str:
    """The catalog id of a row's model ("meta-llama/Llama-3.1-8B-Instruct", "Qwen2.5-7B-Instruct-AWQ": the row's quant
    column gives the format), else the name as given."""
    return resolve_id(name, packaging=True) or name.strip()


def load_rows(path: str | Path | list | tuple | None = None) -> list[CalibrationRow]:
    """Every line of the CSV(s) as a CalibrationRow (unscorable ones with ``skip`` set). ``path``: one CSV, a list of
    them, or None for ``$TOKSPEED_CALIBRATION_CSV`` if set, else every file of ``CALIBRATION_CSVS``."""
    if path is None:
        paths = [Path(os.environ["TOKSPEED_CALIBRATION_CSV"])] if os.environ.get("TOKSPEED_CALIBRATION_CSV") \
            else list(CALIBRATION_CSVS)
    else:
        paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]
    return [row for p in paths for row in _load_csv(p)]


def _load_csv(path: Path) -> list[CalibrationRow]:
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r, bad = gated(r)               # row_cells: counts and figures through the typed gate, else skipped
            quant = sized_quant(map_quant(r["quant"]), r.get("model_bytes", ""))
            decode = r["metric"] != "prefill"
            prompt = _int(r["prompt_tokens"], 0 if decode else None)   # unstated decode prompt: short
            gen = _int(r["gen_tokens"], DEFAULT_GEN if decode else 0)
            try:
                hw = row_hardware(r)
            except UserError:       # a zero or blanked bandwidth / capacity: a placeholder device, never scored
                hw = row_hardware(dict(r, bandwidth_GBps="1", memory_GB=""))
                bad = bad or "bandwidth_GBps / memory_GB not a positive number"
            hw = with_row_driver(hw, r.get("note", ""))          # the driver and OS its note names
            hw = backend_view(engine_key(r["engine"]), hw, quant)   # as compat.runnable
            threads = note_threads(r.get("note", ""))
            if threads is not None and not 1 <= threads <= MAX_TOKENS:
                bad, threads = bad or "note's thread count not a whole number >= 1 in range", None
            if hw.kind == "cpu" or "cpu" in engine_key(r["engine"]):
                hw = with_numa(with_threads(hw, threads),      # the row's -t, --numa
                               note_option(NOTE_NUMA, r.get("note", ""), None))
            engine = engine_key(r["engine"])
            era = row_era(engine, r.get("date", ""), r.get("build", ""))
            ubatch = note_count(NOTE_UBATCH, r.get("note", ""), UBATCH)
            n_batch = note_count(NOTE_NBATCH, r.get("note", ""), NBATCH)
            if ubatch is None or n_batch is None:
                bad = bad or "note's -ub / -b not a whole number >= 1 in range"
                ubatch, n_batch = ubatch or UBATCH, n_batch or NBATCH
            out.append(CalibrationRow(
                id=r["id"], source=r["source"], hw=hw, family=device_family(r["hardware"], r["vendor"]),
                n_devices=_int(r["n_devices"], 1), model=_model_id(r["model"]), quant=quant,
                engine=engine_key(r["engine"]), metric=r["metric"].strip(), prompt=prompt or 0, gen=gen,
                context=_int(r["context_depth"], 0), batch=_int(r["batch"], 1), tok_s=measured_rate(r["tok_s"]),
                confidence=r["confidence"], flags=r["flags"],
                skip=bad or _skip_reason(r, quant, prompt, gen, ubatch, n_batch, era),
                date=r.get("date", "").strip(), build=r.get("build", "").strip(),
                era=era,
                month=row_month(engine_key(r["engine"]), r.get("date", ""), r.get("build", "")),
                parallel=r.get("parallel", "").strip() or "none", model_bytes=_float(r.get("model_bytes", "")),
                driver=row_driver(engine_key(r["engine"]), hw),
                ubatch=ubatch, n_batch=n_batch))
    return mark_rising_series(out)      # series.py: a prompt series rising with its length times something else
