"""A free-form device name (a benchmark table's, nvidia-smi's) to the catalog device it most likely is
(tokspeed.hardware.match): what a calibration row named outside the catalog's spellings keeps from the catalog, and
the hint an unknown name gets."""

import csv

import pytest

from tokspeed.calibration import DEFAULT_CSV
from tokspeed.calibration.rows import row_hardware
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.match import closest_device


def test_agrees_with_the_exact_lookup_on_every_calibration_device():
    """Every device name of the shipped calibration table, with its own bandwidth and memory columns: the word match
    finds the same entry as the catalog's exact name lookup."""
    with open(DEFAULT_CSV, newline="") as f:
        names = {(r["hardware"], r["bandwidth_GBps"], r["memory_GB"]) for r in csv.DictReader(f)}
    assert len(names) > 30
    for name, bw, mem in names:
        near = closest_device(name, float(bw or 0), float(mem or 0))
        assert near is not None and near.id == get_hardware(name).id, name


@pytest.mark.parametrize("name, bw, mem, expect", [
    ("NVIDIA H100 80GB HBM3", 3350, 80, "h100-sxm"),      # nvidia-smi's name of the SXM5 part (the PCIe has HBM2e)
    ("NVIDIA H100 NVL 94GB", 3900, 94, "h100-nvl"),
    ("NVIDIA B200", 8000, 180, "b200"),                    # not GB200
    ("NVIDIA H200 NVL", 4800, 141, "h200-nvl"),
    ("Apple M4 Max (40-core GPU)", 546, 0, "m4-max-40"),
    ("Apple M4 Max (32-core GPU)", 410, 0, "m4-max-32"),
    ("Radeon RX 7900 XTX", 960, 24, "rx-7900-xtx"),        # not the XT
    ("Intel Arc A770", 560, 16, "arc-a770"),               # not the A750
    ("NVIDIA DGX Spark", 273, 128, "dgx-spark"),
    ("AMD Ryzen AI Max+ 395", 256, 128, "ryzen-ai-max-395"),
    ("Tesla V100-SXM2-16GB", 900, 16, "v100-16g-sxm"),     # the memory size picks the 16 GB part
    ("NVIDIA Tesla P40 24GB", 346, 24, "p40"),
    ("RTX4090", 1008, 0, "rtx-4090"),
    ("NVIDIA GeForce RTX 3060 Ti", 448, 8, "rtx-3060-ti"),  # not the RTX 3060
])
def test_table_spellings_find_their_device(name, bw, mem, expect):
    assert closest_device(name, bw, mem).id == expect


@pytest.mark.parametrize("name, bw, mem", [
    ("AMD Radeon RX 6800", 512, 16),             # not the RX 6800 XT: 60 CUs, not 72
    ("NVIDIA GeForce RTX 3080 12GB", 912, 12),   # not the 3080 Ti (80 SMs; the 12 GB 3080 has 70) nor the 10 GB 3080
    ("NVIDIA RTX 6000", 672, 24),                # Quadro RTX 6000 (Turing), not the RTX 6000 Ada
    ("NVIDIA Jetson AGX Orin 32GB", 204.8, 32),  # the 32 GB module has fewer cores than the 64 GB one
])
def test_another_product_of_the_same_number_is_not_taken(name, bw, mem):
    assert closest_device(name, bw, mem) is None


def test_an_unstated_variant_takes_the_unstated_entry():
    assert closest_device("NVIDIA A100 80GB", 2039, 80).id == "a100-80g-unstated"     # SXM4 or PCIe: unstated
    assert closest_device("Apple M1 Max", 400, 64).id == "m1-max-unstated"


def test_a_stated_bandwidth_must_agree():
    # the RTX 4000 Ada streams 360 GB/s; a row saying 416 (a Quadro RTX 4000's) is not that card
    assert closest_device("NVIDIA RTX 4000 Ada", 416, 8) is None
    assert closest_device("NVIDIA RTX 4000 Ada", 360, 20).id == "rtx-4000-ada"
    # an H100 without its form factor: the bandwidth picks it (PCIe 2,000, SXM5 3,350, NVL 3,900 GB/s)
    assert closest_device("NVIDIA H100", 3350, 80).id == "h100-sxm"


def test_names_without_a_model_number_or_unknown_bins_match_nothing():
    assert closest_device("NVIDIA GPU", 1000) is None
    assert closest_device("Apple M3 Pro (14-core GPU)", 150) is None       # a bin the catalog lacks
    assert closest_device("AMD EPYC 9654", 460) is None                    # CPUs are memory systems there


def test_a_row_named_outside_the_catalog_keeps_the_catalogs_figures():
    """A row naming "NVIDIA B200" (the catalog says "NVIDIA B200 (HGX/DGX, per GPU)") takes the catalog's FP32 figure
    (cores x clock: the kernel bound) and board power; without them the part would stream at its full HBM rate."""
    row = {"id": "x1", "hardware": "NVIDIA B200", "hardware_kind": "gpu", "vendor": "NVIDIA", "memory_GB": "180",
           "bandwidth_GBps": "8000", "fp16_TFLOPS": ""}
    hw, b200 = row_hardware(row), get_hardware("b200")
    assert hw.fp32_tflops == b200.fp32_tflops > 0 and hw.tdp_w == b200.tdp_w > 0
    assert hw.fp16_tflops == b200.fp16_tflops and hw.bandwidth_gbps == 8000


def test_a_name_people_write_is_taken_with_a_note_and_several_without_a_default_are_named():
    from tokspeed.hardware.catalog import lookup_hardware

    hw, note = lookup_hardware("NVIDIA H100 80GB HBM3")      # HBM3 and 80 GB: the SXM5 alone
    assert hw.id == "h100-sxm" and "taken as h100-sxm" in note
    hw, note = lookup_hardware("NVIDIA H100")                # several: the common one, the others named
    assert hw.id == "h100-sxm" and all(x in note for x in ("h100-pcie", "h100-nvl"))
    with pytest.raises(UserError):            # no model number: not one device, not a guess
        get_hardware("NVIDIA Laptop GPU")
