"""The architecture table (tokspeed/hardware/archs.toml): every row checked, and no new place naming an arch."""

import re
import tomllib

import pytest

from tokspeed.hardware import arch as A
from tokspeed.hardware.arch_names import infer_arch
from noun_scan import files_naming

DATA = tomllib.loads(A.TABLE.read_text())
ROWS = DATA["arch"]
VENDORS = {"nvidia", "amd", "intel", "apple", "google", "arm"}


@pytest.mark.parametrize("name", list(ROWS))
def test_every_row(name):
    row = ROWS[name]
    assert row["vendor"] in VENDORS and row["what"] and row["source"]
    assert set(row.get("units", ())) <= set(A.MATRIX_UNITS)
    if "fp32_lanes_per_core" in row:     # an SM / CU / Xe-core / Apple GPU core: 64, 128, or Kepler's 192
        assert row["fp32_lanes_per_core"] in (64, 128, 192)
    if "vulkan_family" in row:
        assert row["vulkan_family"] in DATA["vulkan_family"]
    if row["vendor"] == "nvidia" and name not in ("fermi", "kepler", "maxwell"):
        assert row["validation_family"]
    if row.get("kind") != "cpu" and row["vendor"] not in ("apple",):
        # a device that states no arch gets this one from its name: some pattern must name it
        assert name in {a for v in DATA["names"].values() for a, _ in v}


def test_names_patterns_name_rows():
    for vendor, pairs in DATA["names"].items():
        for arch, pattern in pairs:
            assert arch in ROWS and ROWS[arch]["vendor"] == vendor
            re.compile(pattern)


def test_kernel_units_are_units():
    for units in A.kernel_units().values():
        assert set(units) <= set(A.MATRIX_UNITS)


def test_rows_by_hand():
    # GA102 whitepaper: 128 FP32 lanes per SM (doubled from Turing's 64); RDNA 3: dual-issue, 128 per CU;
    # RDNA 2: 64 per CU; an RX 7900 XTX (Navi 31) is RDNA 3, an RTX 3090 Ampere GA10x
    assert infer_arch("NVIDIA", "gpu", "NVIDIA GeForce RTX 3090") == "ampere" and A.arch_fp32_lanes("ampere") == 128
    assert A.arch_fp32_lanes("turing") == 64 and A.arch_fp32_lanes("rdna2") == 64
    assert infer_arch("AMD", "gpu", "AMD Radeon RX 7900 XTX") == "rdna3" and A.arch_fp32_lanes("rdna3") == 128
    assert A.vulkan_family("rdna3.5") == "rdna3" and A.vulkan_fa_coopmat1("rdna3")
    assert not A.vulkan_fa_coopmat1(A.vulkan_family("xe2"))      # Intel DPAS: M = 8, no 16x16x16 shape
    assert A.validation_family("ampere-ga100") == A.validation_family("ampere") == "Ampere"


@pytest.mark.parametrize("name", list(ROWS))
def test_an_arch_is_named_in_at_most_two_modules(name):
    files = files_naming(name, ignore_case=True)
    assert len(files) <= 2, f"{name} named in {files}: ask tokspeed.hardware.arch"
