#!/usr/bin/env python3
"""Build ``tokspeed/hardware/data/hardware.toml`` from the reference hardware CSV (+ calibration CSV).

Inputs ship with the repository: ``data/reference/hardware-specs.csv`` (+ ``hardware-specs.md``, its
notes and sources) and ``data/validation/calibration.csv``.

    python scripts/build_hardware_catalog.py [CSV] [--calibration CSV] [-o OUT] [--check]

Every reference row becomes a ``[[device]]`` (gpu, soc, cpu; TPU and Gaudi as "accelerator") or a
``[[link]]`` (interconnect rows). Numbers are copied as published; anything computed is written
with its formula in the entry's ``derived`` list:
- ``host_link_gbps`` (per direction) from the ``host_link`` text and the link rows
  (``tokspeed.hardware.links.parse_host_link``), e.g. PCIe 4.0 x8 = 31.5 x 8/16.
- CPU memory systems have no capacity in the CSV (a memory system is not a machine); the catalog
  assumes one module per channel of the size written in ``CPU_MODULE_GB`` and says so.
- FLOP/s the CSV leaves blank (#11): NVIDIA parts from SMs x per-SM rate x clock (``NV_TENSOR``), Apple
  M3/M4 from GPU cores x per-core rate (``APPLE_TF_PER_CORE``), CPU rows from an assumed processor
  (``CPU_FLOPS``); ``fp16_accumulate_2x`` for GeForce and the L40; a SoC's CPU cluster
  (``cpu_bandwidth_gbps`` / ``_band_pct``, ``cpu_fp32_tflops``); an MI250X as one of its two GCDs.
- Devices of ``validation/calibration.csv`` that the reference CSV lacks are added from that file's
  own per-device columns; binned Apple GPUs get FP16/FP32 scaled by GPU core count from the full
  chip (same clock within a chip tier), and memory from the full chip where the file states none.
The output is deterministic: re-running on the same CSVs reproduces the committed file (a test checks).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from tokspeed.hardware.links import Link, parse_host_link  # noqa: E402
from tokspeed.toml_writer import dumps  # noqa: E402

from hardware_catalog_arch import CAL_ARCH  # noqa: E402
from hardware_catalog_ids import CALIBRATION_IDS, IDS  # noqa: E402
from hardware_catalog_cpu import (APPLE_CPU_SHARE, APPLE_P_CORES, APPLE_P_GHZ, APPLE_P_GHZ_BASIS,  # noqa: E402
                                  CITES, CPU_FLOPS, CPU_INT8_PER_FP32, CPU_NAMED, CPU_SOCKETS, LLAMA_THREADS,
                                  NUMA_BASIS, SOC_CPU, SOC_CPU_FLOPS, SOC_CPU_THREADS)

OUT = REPO / "tokspeed" / "hardware" / "data" / "hardware.toml"

# CSV kind -> catalog kind
KIND = {"gpu": "gpu", "soc": "soc", "cpu": "cpu", "tpu": "accelerator", "accelerator": "accelerator"}

# CPU memory systems: the CSV gives bandwidth only. Capacity assumed = channels x one module of
# this size (a common configuration, not a limit); users write their own in a custom TOML.
CPU_MODULE_GB = {"DDR4": 32, "DDR5": 32, "DDR4 RDIMM": 64, "DDR5 RDIMM": 64, "MRDIMM (MCR DIMM)": 64}

# ---- FLOP/s the reference table leaves blank (#11 item 6) -------------------------------------------
# Derived as units x clock x FLOPs per unit per cycle; the formula goes into the entry's `derived` list.
# NVIDIA per-SM dense tensor rates (FLOPs per SM per clock, FP16 inputs with FP16 accumulate), from the
# whitepapers' tables, checked against catalog rows: GA10x/AD10x/GB20x 1024 (RTX 3090: 82 SM x 1.695 GHz x
# 1024 = 142 TF FP16-acc, catalog 71 at FP32-acc; RTX 4090: 128 x 2.52 x 1024 = 330), FP8 and INT8 2048 on
# Ada/Blackwell, INT8 2048 on GA10x; GA10B (Orin) like GA100: 2048 FP16 / 4096 INT8. GeForce (and the
# DGX Spark, ASSUMED consumer-class) run FP32 accumulate at half the FP16-accumulate rate; RTX Ada
# workstation cards ASSUMED full rate, as the RTX A6000 and L40S are (reference notes, pitfall 2).
# FP32 (CUDA cores) = SMs x 128 x 2 x clock. Boost clocks from NVIDIA's product pages.
NV_TENSOR = {
    # id: (SMs, boost GHz, arch, half-rate FP32 accumulate, what the clock is)
    "rtx-4070-ti": (60, 2.61, "ada", True, "boost"),
    "rtx-4070-ti-super": (66, 2.61, "ada", True, "boost"),
    "rtx-4080-super": (80, 2.55, "ada", True, "boost"),
    "rtx-4070-laptop": (36, 2.175, "ada", True, "maximum boost (TGP-dependent 1.23-2.175 GHz)"),
    "rtx-3070": (46, 1.725, "ampere", True, "boost"),
    "rtx-3080-ti": (80, 1.665, "ampere", True, "boost"),
    "rtx-4000-ada": (48, 2.175, "ada", False, "boost"),
    "rtx-5000-ada": (100, 2.55, "ada", False, "boost"),
    "rtx-6000-ada": (142, 2.505, "ada", False, "boost"),
    "rtx-5070-ti": (70, 2.452, "blackwell", True, "boost"),
    "rtx-5070": (48, 2.512, "blackwell", True, "boost"),
    "rtx-5060-ti-16g": (36, 2.572, "blackwell", True, "boost"),
    "rtx-4060": (24, 2.46, "ada", True, "boost"),
    "rtx-4070-super": (56, 2.475, "ada", True, "boost"),
    "rtx-3060-ti": (38, 1.665, "ampere", True, "boost"),
    "rtx-5060": (30, 2.497, "blackwell", True, "boost"),
    # GA107, 2304 CUDA cores = 18 SMs at 1.47 GHz (NVIDIA: RTX 3050 6GB, 70 W); check: 2304 x 2 x 1.47 = 6.77 TF FP32
    "rtx-3050-6g": (18, 1.47, "ampere", True, "boost"),
    # GB202, 24,064 CUDA cores = 188 SMs; boost 2.28 GHz as published, and as NVIDIA's 3,511 AI TOPS (FP4, 2:4 sparse)
    # implies: 188 x 8192 x 2.28 GHz = 3,511 (the Workstation Edition's 4,000 = 188 x 8192 x 2.6 GHz, its 125 TF FP32)
    # GB203, 10,496 CUDA cores = 82 SMs; boost ASSUMED 2.51 GHz, what the 1,687 AI TOPS headline (FP4, 2:4 sparse)
    # implies (82 x 8192 x 2.51 GHz); a 54.9 TF FP32 figure would mean 2.62 GHz: the lower is taken, low confidence
    "rtx-pro-4500": (82, 2.51, "blackwell", False, "boost ASSUMED from the 1,687 AI TOPS headline (low confidence)"),
    "rtx-pro-6000-max-q": (188, 2.28, "blackwell", False, "boost (vendor figure; checked against the AI TOPS headline)"),
    # Orin Nano Super: 1024 CUDA cores = 8 SMs at 1.02 GHz; check: 8 x 4096 x 1.02 GHz = 33.4 INT8 TOPS = NVIDIA's
    # "67 sparse TOPS" / 2
    "jetson-orin-nano-super": (8, 1.02, "ga10b", False, "maximum GPU clock (Super mode)"),
    # GB10: 6144 CUDA cores = 48 SMs; clock from its own 31 TF FP32 = 6144 x 2 x 2.52 GHz. Check: FP4 dense
    # 48 x 4096 x 2.52 GHz = 495 TF, x2 sparse = 991 = NVIDIA's "1 PFLOP FP4 with sparsity".
    "dgx-spark": (48, 2.52, "blackwell", True, "implied by the row's 31 TF FP32"),
    # Orin: 2048 CUDA cores = 16 SMs at 1.3 GHz; check: 16 x 4096 x 1.3 GHz = 85 INT8 TOPS = NVIDIA's GPU
    # "170 sparse INT8 TOPS" / 2
    "jetson-agx-orin-64g": (16, 1.3, "ga10b", False, "maximum GPU clock (64 GB module)"),
}
ARCH_RATES = {"ampere": (1024, 0, 2048), "ada": (1024, 2048, 2048), "blackwell": (1024, 2048, 2048),
              "ga10b": (2048, 0, 4096)}  # FLOPs/SM/clock: (FP16 FP16-acc, FP8 FP16-acc, INT8)

# Apple GPUs: cores x 128 FP32 ALUs x 2 FLOPs x clock; FP16 runs at the FP32 rate (reference notes,
# pitfall 4). Apple publishes no M3/M4 clock or TFLOPS.
APPLE_TF_PER_CORE = {
    "M3": (14.2 / 40, "third-party 14.2 TF for the 40-core M3 Max (reference notes, pitfall 4; the lowest "
                      "of 14.2/14.32/16.4) / 40 cores = 0.355 TF per core = 128 x 2 x 1.387 GHz"),
    "M4": (128 * 2 * 1.8e9 / 1e12, "ASSUMED GPU clock 1.8 GHz (Apple publishes none): 128 x 2 x 1.8 GHz = "
                                   "0.4608 TF per core; low confidence"),
    "M5": (128 * 2 * 1.8e9 / 1e12, "ASSUMED the M4's per-core rate (Apple publishes no M5 GPU clock or TFLOPS): "
                                   "128 x 2 x 1.8 GHz = 0.4608 TF per core, the GPU cores' Neural Accelerators not "
                                   "counted; low confidence"),
}

# Intel Xe2 GPUs whose row leaves FLOP/s blank: Xe-cores x per-Xe-core rate x clock. Per Xe2-core and clock: 8 vector
# engines x 16 lanes x 2 = 256 FP32 FLOPs, XMX 2048 FP16 and 4096 INT8 ops (the Arc B580 / B60 rows' derivations).
XE2_RATES = (256, 2048, 4096)
XE2_CORES = {
    # id: (Xe2-cores, GHz, basis)
    "arc-pro-b70": (32, 2.4, "32 Xe2-cores (BMG-G31, as reported; not verified) at an ASSUMED 2.4 GHz, the Arc Pro "
                             "B60's graphics clock (Intel's B70 clock not at hand); low confidence"),
}

# Memory technology of calibration-only devices (the calibration file has no such column); from the
# vendors' product pages. Apple chips take their full chip's.
CAL_MEMORY_TYPE = {
    "rtx-3070": "GDDR6", "rtx-3080-ti": "GDDR6X", "rtx-4070-ti": "GDDR6X", "rtx-4070-ti-super": "GDDR6X",
    "rtx-4080-super": "GDDR6X", "rtx-4070-laptop": "GDDR6", "rtx-4000-ada": "GDDR6 (ECC)",
    "rtx-5000-ada": "GDDR6 (ECC)", "a100-80g-unstated": "HBM2e", "jetson-agx-orin-64g": "LPDDR5 (256-bit, unified)",
}

# Board power of calibration-only devices (the calibration file has no such column), from the vendors' product
# pages and data sheets: the limit a board clocks down to under tensor load (the board-power bound on prompt
# matmuls, tokspeed/engines/profile.py power_flops).
CAL_TDP_W = {
    "rtx-3070": (220, "NVIDIA GeForce RTX 3070 family specifications: graphics card power 220 W"),
    "rtx-3080-ti": (350, "NVIDIA GeForce RTX 3080 family specifications: graphics card power 350 W"),
    "rtx-4070-ti": (285, "NVIDIA GeForce RTX 4070 family specifications: total graphics power 285 W"),
    "rtx-4070-ti-super": (285, "NVIDIA GeForce RTX 4070 family specifications: total graphics power 285 W"),
    "rtx-4080-super": (320, "NVIDIA GeForce RTX 4080 family specifications: total graphics power 320 W"),
    "rtx-4000-ada": (130, "NVIDIA RTX 4000 Ada Generation data sheet: max power consumption 130 W"),
    "rtx-5000-ada": (250, "NVIDIA RTX 5000 Ada Generation data sheet: max power consumption 250 W"),
    "jetson-agx-orin-64g": (60, "NVIDIA Jetson AGX Orin data sheet: 15-60 W power modes (64 GB module; 60 W, "
                                "MAXN)"),
}

# ---- multi-die packages (#11 item 5) ------------------------------------------------------------------------
# An MI250X OAM is two GCDs that the driver shows as two GPUs of 64 GB / 1638.4 GB/s each (reference notes,
# pitfall 6; ROCm mi250.md): a kernel runs on one GCD and reaches only its half. The catalog entry is one GCD
# (the unit a single-device answer is about); two of them (--gpus 2) are the package, linked by the 4
# in-package Infinity Fabric links.
PER_DIE = {"mi250x": 2}
PER_DIE_FIELDS = ("memory_gb", "bandwidth_gbps", "fp16_tflops", "fp8_tflops", "int8_tops", "fp32_tflops", "tdp_w")


def split_package(d: dict) -> None:
    n = PER_DIE.get(d["id"])
    if not n:
        return
    for k in PER_DIE_FIELDS:
        if d.get(k):
            whole = d[k]
            d[k] = num(str(round(whole / n, 4)))
            d["derived"].append(f"{k}: one of {n} GCDs: {whole:g} / {n} = {d[k]:g} (the package's figure is for both)")



# Devices whose catalog FP16 figure is the FP32-accumulate rate, half the FP16-accumulate rate that
# engines accumulating in FP16 (llama.cpp cuBLAS COMPUTE_16F, INT8 MMQ) reach: GeForce (Ampere/Ada/Blackwell
# whitepapers) and the L40 (reference notes, pitfall 2); the DGX Spark ASSUMED consumer-class. Not GeForce GTX
# (Pascal GP10x, Turing TU11x): no tensor cores, so no FP16-accumulate tensor rate to double (the GTX 1080 Ti's
# FP16 is 1/64 of FP32, its CSV cell blank: its matmuls run at the FP32 figure).
def half_rate_fp32_accumulate(d: dict) -> bool:
    if d["vendor"] != "NVIDIA" or "GeForce GTX" in d["name"]:
        return False
    return "GeForce" in d["name"] or d["name"] == "NVIDIA L40" or NV_TENSOR.get(d["id"], (0, 0, "", False))[3]


_APPLE = re.compile(r"^Apple (M\d)(?: (Pro|Max|Ultra))? \((?:\d+-CPU / )?(\d+)-core GPU\)$")


def fill_derived(d: dict, devices: list[dict]) -> None:
    """FLOP/s, the FP16-accumulate flag and a SoC's CPU bandwidth where the tables leave them blank."""
    if half_rate_fp32_accumulate(d):
        d["fp16_accumulate_2x"] = True
    if d["id"] in CAL_MEMORY_TYPE and not d.get("memory_type"):
        d["memory_type"] = CAL_MEMORY_TYPE[d["id"]]
    if d["id"] in CAL_TDP_W and not d.get("tdp_w"):
        d["tdp_w"], basis = CAL_TDP_W[d["id"]]
        d["derived"].append(f"tdp_w: {basis}")
    if d["id"] in XE2_CORES:
        cores, ghz, basis = XE2_CORES[d["id"]]
        for k, rate in zip(("fp32_tflops", "fp16_tflops", "int8_tops"), XE2_RATES):
            if not d.get(k):
                d[k] = round(cores * rate * ghz / 1e3, 2)
                d["derived"].append(f"{k}: DERIVED {cores} Xe2-cores x {rate} per Xe-core per clock x {ghz} GHz = "
                                    f"{d[k]:g}; {basis}")
    if d["id"] in NV_TENSOR:
        sms, ghz, arch, half, clock = NV_TENSOR[d["id"]]
        f16, f8, i8 = ARCH_RATES[arch]
        acc = 2 if half else 1
        vals = {"fp16_tflops": round(sms * f16 * ghz / 1e3 / acc, 1), "fp8_tflops": round(sms * f8 * ghz / 1e3 / acc, 1),
                "int8_tops": round(sms * i8 * ghz / 1e3, 1), "fp32_tflops": round(sms * 128 * 2 * ghz / 1e3, 2)}
        acc_txt = "/ 2 (FP32 accumulate at half rate)" if half else "(FP32 accumulate ASSUMED full rate)"
        for k, v in vals.items():
            if not d.get(k) and v:
                d[k] = v
                rate = {"fp16_tflops": f"{f16} FP16 FLOPs/SM/clock {acc_txt}",
                        "fp8_tflops": f"{f8} FP8 FLOPs/SM/clock {acc_txt}",
                        "int8_tops": f"{i8} INT8 ops/SM/clock", "fp32_tflops": "128 FP32 lanes x 2 FLOPs"}[k]
                d["derived"].append(f"{k}: DERIVED {sms} SMs x {rate} x {ghz} GHz {clock} = {v:g}")
    m = _APPLE.match(d["name"])
    if m and not d.get("fp16_tflops") and m.group(1) in APPLE_TF_PER_CORE:
        per, basis = APPLE_TF_PER_CORE[m.group(1)]
        cores = int(m.group(3))
        d["fp16_tflops"] = d["fp32_tflops"] = round(cores * per, 2)
        d["derived"].append(f"fp16_tflops, fp32_tflops: DERIVED {cores} GPU cores x {per:.4g} TF per core = "
                            f"{d['fp16_tflops']:g} (GPU FP16 = FP32 rate); {basis}")
    um = re.match(r"^(Apple M\d(?: Pro| Max| Ultra)?) \(GPU cores unstated\)$", d["name"])
    if um and not d.get("fp16_tflops"):
        # a reference row averages the reference table's bins only: it rebuilds the same without the calibration file
        own = d["source"].startswith(CALIBRATION_SOURCE)
        bins = [x for x in devices if _APPLE.match(x["name"]) and x["name"].startswith(um.group(1) + " (")
                and x.get("fp16_tflops") and (own or not x["source"].startswith(CALIBRATION_SOURCE))]
        if bins:
            tf = round(sum(x["fp16_tflops"] for x in bins) / len(bins), 3)
            d["fp16_tflops"] = d["fp32_tflops"] = tf
            d["derived"].append("fp16_tflops, fp32_tflops: DERIVED mean of the GPU-core bins "
                                + ", ".join(f"{x['id']} {x['fp16_tflops']:g}" for x in bins) + " (core count unstated)")
    for table, assumed in ((CPU_FLOPS, True), (CPU_NAMED, False)):
        if d["id"] in table and not d.get("fp32_tflops"):
            cpu_flops(d, *table[d["id"]], assumed)
    if d["id"] in CPU_SOCKETS:
        n = CPU_SOCKETS[d["id"]]
        d["cpu_bandwidth_gbps"], d["cpu_bandwidth_band_pct"] = round(d["bandwidth_gbps"] / n, 1), 40
        d["derived"].append(f"cpu_bandwidth_gbps: {d['bandwidth_gbps']:g} / {n} = {d['cpu_bandwidth_gbps']:g} GB/s "
                            f"(+-40 %): " + NUMA_BASIS.format(n=n))
    if d["kind"] == "soc":
        am = re.match(r"^Apple M\d(?: (Pro|Max|Ultra))?\b", d["name"])
        if am:
            share, band, basis = APPLE_CPU_SHARE[am.group(1) or ""]
            gbps = round(share * d["bandwidth_gbps"], 1)
            if not d["name"].startswith("Apple M1"):
                band = max(band, 30)   # the share was measured on M1 chips only
        elif d["id"] in SOC_CPU:
            gbps, band, basis = SOC_CPU[d["id"]]
            gbps = round(gbps, 1)
        else:
            raise SystemExit(f"SoC {d['id']}: no CPU-cluster bandwidth; add it to APPLE_CPU_SHARE or SOC_CPU")
        for key, cite in CITES.items():
            basis = basis.replace(key, cite)
        d["cpu_bandwidth_gbps"], d["cpu_bandwidth_band_pct"] = gbps, band
        d["derived"].append(f"cpu_bandwidth_gbps: {gbps:g} GB/s (+-{band} %): {basis}")
        chip = re.match(r"^Apple (M\d(?: Pro| Max| Ultra)?) \((?:\d+-CPU / )?(\d+)?", d["name"])
        if chip:
            name, gpu = chip.group(1), int(chip.group(2)) if chip.group(2) else None
            p = APPLE_P_CORES.get((name, gpu), APPLE_P_CORES.get((name, None)))
            gen = name.split()[0]
            ghz = APPLE_P_GHZ.get(gen)
            if ghz:     # a generation whose P-core clock is not at hand keeps its CPU FLOP/s unknown (0)
                d["cpu_fp32_tflops"] = round(p * 32 * ghz / 1e3, 3)
                d["derived"].append(f"cpu_fp32_tflops: DERIVED {p} P-cores x 32 FP32 FLOPs/cycle (4 x 128-bit FMA) x "
                                    f"{ghz} GHz = {d['cpu_fp32_tflops']:g} (E-cores not counted: llama.cpp threads = "
                                    "P-cores)" + (f"; {APPLE_P_GHZ_BASIS[gen]}" if gen in APPLE_P_GHZ_BASIS else ""))
            d["cpu_threads"] = p
            d["derived"].append(f"cpu_threads: {p} P-cores ({LLAMA_THREADS})")
        elif d["id"] in SOC_CPU_FLOPS:
            cores, per, ghz, basis = SOC_CPU_FLOPS[d["id"]]
            d["cpu_fp32_tflops"] = round(cores * per * ghz / 1e3, 3)
            d["derived"].append(f"cpu_fp32_tflops: DERIVED {basis}: {cores} x {per} x {ghz} GHz = {d['cpu_fp32_tflops']:g}")
            threads, how = SOC_CPU_THREADS[d["id"]]
            d["cpu_threads"] = threads
            d["derived"].append(f"cpu_threads: {threads}, {how} ({LLAMA_THREADS})")


def cpu_flops(d: dict, cores: int, per_cycle: int, ghz: float, basis: str, assumed: bool) -> None:
    """A CPU row's FP32 peak, thread count and int8 dot-product rate from its processor (the row's own, or an
    ``assumed`` representative one): cores x FP32 FLOPs per cycle x clock."""
    d["fp32_tflops"] = round(cores * per_cycle * ghz / 1e3, 3)
    lead = "ASSUMED processor " if assumed else "the row's processor, "
    d["derived"].append(f"fp32_tflops: {lead}{basis}: {cores} x {per_cycle} x {ghz} GHz = {d['fp32_tflops']:g}")
    d["cpu_threads"] = cores
    d["derived"].append(f"cpu_threads: {cores}, the {'ASSUMED ' if assumed else ''}processor's physical cores "
                        f"({LLAMA_THREADS})")
    if d["id"] in CPU_INT8_PER_FP32 and not d.get("int8_tops"):
        k, isa = CPU_INT8_PER_FP32[d["id"]]
        d["int8_tops"] = round(k * d["fp32_tflops"], 3)
        d["derived"].append(f"int8_tops: DERIVED int8 dot products ({isa}) = {k} x the FP32 rate: "
                            f"{k} x {d['fp32_tflops']:g} = {d['int8_tops']:g}")


FIELD_ORDER = ["id", "name", "kind", "vendor", "arch", "matrix_units", "memory_gb", "memory_type", "bandwidth_gbps",
               "fp16_tflops", "fp8_tflops", "int8_tops", "fp32_tflops", "fp16_accumulate_2x", "cpu_bandwidth_gbps",
               "cpu_bandwidth_band_pct", "cpu_fp32_tflops", "cpu_threads", "host_link", "host_link_gbps",
               "scale_up_gbps", "tdp_w", "release_year", "confidence", "aliases", "derived", "source", "notes"]
LINK_ORDER = ["id", "name", "vendor", "per_direction_gbps", "bidirectional_gbps", "release_year",
              "aliases", "source", "notes"]


REFERENCE_CSV = REPO / "data" / "reference" / "hardware-specs.csv"   # shipped copy (+ hardware-specs.md notes)
CALIBRATION_CSV = REPO / "data" / "validation" / "calibration.csv"    # shipped copy of the calibration file


CALIBRATION_SOURCE = "validation/calibration.csv"   # how a calibration-only device's source begins


def calibration_csv() -> Path | None:
    """The repository's calibration file (``data/validation/calibration.csv``), None if it is missing."""
    return CALIBRATION_CSV if CALIBRATION_CSV.is_file() else None


def num(cell: str):
    """A CSV cell as int/float; blank -> 0 (unknown)."""
    cell = (cell or "").strip()
    if not cell:
        return 0
    v = float(cell)
    return int(v) if v.is_integer() else v


def confidence(notes: str) -> str:
    m = re.match(r"\s*\[conf:\s*([^\]]*)\]", notes or "")
    return m.group(1).strip() if m else ""


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def build_links(rows) -> list[dict]:
    out = []
    for r in rows:
        lid, aliases = IDS.get(r["name"], (slug(r["name"]), []))
        out.append({"id": lid, "name": r["name"], "vendor": r["vendor"],
                    "per_direction_gbps": num(r["bandwidth_GBps"]),
                    "bidirectional_gbps": num(r["scale_up_link_GBps"]),
                    "release_year": num(r["release_year"]), "aliases": aliases,
                    "source": r["sources"], "notes": r["notes"]})
    return out


def build_device(r, links: list[Link]) -> dict:
    hid, aliases = IDS.get(r["name"], (slug(r["name"]), []))
    kind = KIND[r["kind"]]
    d = {"id": hid, "name": r["name"], "kind": kind, "vendor": r["vendor"],
         "memory_gb": num(r["memory_GB"]), "memory_type": r["memory_type"],
         "bandwidth_gbps": num(r["bandwidth_GBps"]),
         "fp16_tflops": num(r["fp16_bf16_dense_TFLOPS"]), "fp8_tflops": num(r["fp8_dense_TFLOPS"]),
         "int8_tops": num(r["int8_dense_TOPS"]), "fp32_tflops": num(r["fp32_TFLOPS"]),
         "host_link": r["host_link"], "scale_up_gbps": num(r["scale_up_link_GBps"]),
         "tdp_w": num(r["tdp_W"]), "release_year": num(r["release_year"]),
         "confidence": confidence(r["notes"]), "aliases": aliases, "derived": [],
         "source": r["sources"], "notes": r["notes"], "arch": r["arch"],
         "matrix_units": [u for u in r["matrix_units"].split(";") if u]}
    if r["kind"] != kind:
        d["derived"].append(f"kind: {kind} (reference CSV kind {r['kind']!r})")
    gbps, basis = parse_host_link(r["host_link"], links)
    d["host_link_gbps"] = num(str(round(gbps, 4)))
    if r["host_link"]:
        d["derived"].append(f"host_link_gbps: {basis}")
    if not d["memory_gb"]:
        d["memory_gb"], basis = assumed_capacity(r)
        d["derived"].append(f"memory_gb: {basis}")
    return d


def assumed_capacity(r) -> tuple[float, str]:
    """Capacity for a memory-system row (blank in the CSV)."""
    m = re.search(r"up to (\d+) GB", r["sources"] + " " + r["notes"])
    if m:
        return int(m.group(1)), f"not in the CSV column; 'up to {m.group(1)} GB' from the row's sources/notes"
    name = r["name"]
    ch = 2 if "dual-channel" in name else int(re.search(r"(\d+)ch\b", name).group(1))
    module = CPU_MODULE_GB[r["memory_type"]]
    return ch * module, (f"ASSUMED {ch} channels x 1 module x {module} GB (the CSV gives bandwidth only; "
                         "write your machine's capacity in a custom TOML)")


_CORES = re.compile(r"^(Apple M\d(?: Pro| Max| Ultra)?) \((\d+)-core GPU\)$")


def build_calibration_devices(cal_rows, devices: list[dict]) -> list[dict]:
    """Devices named in calibration.csv that the reference CSV lacks, from that file's own columns."""
    known = {d["name"] for d in devices}
    by_name: dict[str, list[dict]] = {}
    for r in cal_rows:
        by_name.setdefault(r["hardware"], []).append(r)
    out = []
    for name, rows in by_name.items():
        if name in known:
            continue
        first = rows[0]
        hid, aliases = CALIBRATION_IDS.get(name, (slug(name), []))
        mem_rows = [r for r in rows if r["memory_GB"].strip()]
        fp_rows = [r for r in rows if r["fp16_TFLOPS"].strip()]
        src = f"validation/calibration.csv row {first['id']} (vendor peak as recorded there)"
        d = {"id": hid, "name": name, "kind": first["hardware_kind"], "vendor": first["vendor"],
             "bandwidth_gbps": num(first["bandwidth_GBps"]), "memory_gb": 0,
             "fp16_tflops": num(fp_rows[0]["fp16_TFLOPS"]) if fp_rows else 0,
             "aliases": aliases, "derived": [], "source": src,
             "notes": "Not in the reference hardware table; added from the calibration file's per-device columns."}
        if mem_rows:
            d["memory_gb"] = max(num(r["memory_GB"]) for r in mem_rows)
            d["source"] += f"; memory_gb from row {max(mem_rows, key=lambda r: num(r['memory_GB']))['id']}"
        d["arch"], units, basis = CAL_ARCH[hid] if hid in CAL_ARCH else same_chip_arch(name, devices)
        d["matrix_units"] = list(units)
        d["source"] += f"; arch: {basis}"
        sibling = full_apple_chip(name, devices)
        if sibling is not None:
            full, cores, full_cores = sibling
            if not d["fp16_tflops"] and full["fp16_tflops"]:
                tf = round(full["fp16_tflops"] * cores / full_cores, 4)
                d["fp16_tflops"] = d["fp32_tflops"] = tf
                d["derived"].append(f"fp16_tflops, fp32_tflops: DERIVED {full['fp16_tflops']:g} x {cores}/{full_cores} "
                                    f"GPU cores from {full['id']} (same GPU clock within a chip tier; GPU FP16 = FP32 rate)")
            if not d["memory_gb"]:
                d["memory_gb"] = full["memory_gb"]
                d["derived"].append(f"memory_gb: {full['id']}'s maximum configuration (the calibration rows "
                                    "state none; binned chips may offer less)")
            d["memory_type"] = full["memory_type"]
        variants = unstated_variants(name, devices)
        if variants and not d.get("fp32_tflops") and len({v["fp32_tflops"] for v in variants}) == 1:
            d["fp32_tflops"] = variants[0]["fp32_tflops"]
            d["derived"].append(f"fp32_tflops: {', '.join(v['id'] for v in variants)} (every form factor of "
                                "the part lists the same FP32 peak)")
        if variants and not d.get("tdp_w") and all(v.get("tdp_w") for v in variants):
            d["tdp_w"] = num(str(round(sum(v["tdp_w"] for v in variants) / len(variants), 1)))
            d["derived"].append("tdp_w: DERIVED mean of " + " and ".join(f"{v['id']} {v['tdp_w']:g} W" for v in variants)
                                + " (form factor unstated)")
        if not d["memory_gb"]:
            raise SystemExit(f"calibration device {name!r}: no memory_GB anywhere; add it to this script")
        out.append(d)
    return out


def same_chip_arch(name: str, devices: list[dict]) -> tuple[str, list[str], str]:
    """(arch, matrix units, basis) of a calibration-only Apple bin or unstated variant: its chip's reference row."""
    chip = re.match(r"^(Apple M\d(?: Pro| Max| Ultra)?|NVIDIA A100 80GB) \(", name)
    same = [d for d in devices if chip and d["name"].startswith(chip.group(1) + " ") and d.get("arch")]
    if not same:
        raise SystemExit(f"calibration device {name!r}: no arch; add it to CAL_ARCH in scripts/hardware_catalog_arch.py")
    return same[0]["arch"], same[0]["matrix_units"], f"{same[0]['arch']}, that of {same[0]['id']} (the same chip)"


def unstated_variants(name: str, devices: list[dict]) -> list[dict]:
    """The catalog's form factors of a part whose calibration name leaves it unstated
    (``NVIDIA A100 80GB (SXM4/PCIe unstated)`` -> the A100 80GB SXM4 and PCIe entries)."""
    m = re.match(r"^(.*?) \(([\w/]+) unstated\)$", name)
    if not m or "/" not in m.group(2):
        return []
    return [d for d in devices if any(d["name"] == f"{m.group(1)} {v}" for v in m.group(2).split("/"))]


def full_apple_chip(name: str, devices: list[dict]):
    """For 'Apple M1 (7-core GPU)': (the reference row of the same chip, 7, its core count)."""
    m = _CORES.match(name)
    if not m:
        return None
    chip, cores = m.group(1), int(m.group(2))
    for d in devices:
        dm = re.match(rf"^{re.escape(chip)} \((?:\d+-CPU / )?(\d+)-core GPU\)$", d["name"])
        if dm:
            return d, cores, int(dm.group(1))
    return None


def ordered(d: dict, order: list[str]) -> dict:
    """A device or link as its TOML table holds it: the fields of ``order`` that are set, in that order."""
    return {k: d[k] for k in order if d.get(k) not in (None, "", [], 0) or k in ("id", "name")}


def render(csv_path: Path, cal_path: Path | None) -> str:
    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    link_dicts = build_links(r for r in rows if r["kind"] == "interconnect")
    links = [Link(**d) for d in link_dicts]
    devices = [build_device(r, links) for r in rows if r["kind"] != "interconnect"]
    extra = []
    if cal_path is not None:
        with open(cal_path, newline="", encoding="utf-8") as f:
            extra = build_calibration_devices(list(csv.DictReader(f)), devices)
    for d in devices + extra:
        split_package(d)
        fill_derived(d, devices + extra)
    ids = [d["id"] for d in devices + extra] + [d["id"] for d in link_dicts]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SystemExit(f"duplicate ids: {dup}")
    head = ("# GENERATED by scripts/build_hardware_catalog.py from data/reference/hardware-specs.csv\n"
            "# (and devices of data/validation/calibration.csv missing there). Do not edit by hand:\n"
            "# change the CSV or the script and re-run it. Units are in the field names; *_gbps of links\n"
            "# and host_link_gbps are per direction; scale_up_gbps is the vendors' bidirectional sum.\n"
            f"# {len(devices)} reference devices, {len(extra)} calibration-only devices, {len(link_dicts)} links.\n")
    tables = {"device": [ordered(d, FIELD_ORDER) for d in devices + extra],
              "link": [ordered(d, LINK_ORDER) for d in link_dicts]}
    return dumps({k: v for k, v in tables.items() if v}, header=head)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", type=Path, default=REFERENCE_CSV)
    ap.add_argument("--calibration", type=Path, default=calibration_csv() or Path(""),
                    help="calibration.csv whose devices must all resolve ('' to skip)")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file differs instead of writing")
    args = ap.parse_args(argv)
    if not args.csv.is_file():
        ap.error(f"no such CSV: {args.csv}")
    cal = args.calibration if str(args.calibration) and args.calibration.is_file() else None
    text = render(args.csv, cal)
    if args.check:
        same = args.output.is_file() and args.output.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{args.output} differs from a fresh build", file=sys.stderr)
        return 0 if same else 1
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
