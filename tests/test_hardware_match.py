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


def test_a_stated_bandwidth_must_agree():
    # a Quadro RTX 4000 (Turing, 416 GB/s) is not an RTX 4000 Ada (360 GB/s), whose words it shares
    assert closest_device("NVIDIA RTX 4000", 416, 8) is None
    assert closest_device("NVIDIA RTX 4000", 360, 20).id == "rtx-4000-ada"


def test_names_without_a_model_number_or_unknown_bins_match_nothing():
    assert closest_device("NVIDIA GPU", 1000) is None
    assert closest_device("Apple M3 Ultra (60-core GPU)", 819) is None     # a bin the catalog lacks
    assert closest_device("AMD EPYC 9654", 460) is None                    # CPUs are memory systems there


def test_a_row_named_outside_the_catalog_keeps_the_catalogs_figures():
    """A row naming "NVIDIA B200" (the catalog says "NVIDIA B200 (HGX/DGX, per GPU)") takes the catalog's FP32 figure
    (cores x clock: the kernel bound) and board power; without them the part would stream at its full HBM rate."""
    row = {"id": "x1", "hardware": "NVIDIA B200", "hardware_kind": "gpu", "vendor": "NVIDIA", "memory_GB": "180",
           "bandwidth_GBps": "8000", "fp16_TFLOPS": ""}
    hw, b200 = row_hardware(row), get_hardware("b200")
    assert hw.fp32_tflops == b200.fp32_tflops > 0 and hw.tdp_w == b200.tdp_w > 0
    assert hw.fp16_tflops == b200.fp16_tflops and hw.bandwidth_gbps == 8000


def test_an_unknown_name_is_named_not_taken():
    with pytest.raises(UserError) as e:
        get_hardware("NVIDIA H100 80GB HBM3")
    assert e.value.message.startswith("unknown hardware") and "h100-sxm" in e.value.suggestion
