"""Architecture as data (issue 25 item 2): every catalog device states its arch and matrix units from the documented
vocabulary, a user's file may state them (checked, one clear error), a file that states none gets what its name
implies and says so, and the engine rules read the fields, not the name."""

import csv
import re
from pathlib import Path

import pytest

from tokspeed.calibration import device_family
from tokspeed.engines.issue import core_cycles_per_s, fp32_lanes_per_core
from tokspeed.engines.memory import memory_class
from tokspeed.engines.mmq import has_tensor_cores, mmq_unit
from tokspeed.errors import UserError
from tokspeed.hardware.arch import ARCHS, MATRIX_UNITS
from tokspeed.hardware.catalog import get_hardware, hardware_from_toml
from tokspeed.hardware.devices import all_hardware
from tokspeed.hardware.spec import Hardware

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("hw", all_hardware(), ids=lambda h: h.id)
def test_every_catalog_device_states_an_arch_from_the_vocabulary_with_a_source(hw):
    assert hw.arch in ARCHS
    assert set(hw.matrix_units) <= set(MATRIX_UNITS)
    assert "arch: " in hw.source                       # the whitepaper / data sheet the arch comes from
    assert not any(d.startswith(("arch:", "matrix_units:")) for d in hw.derived), "stated, not guessed"


def test_the_reference_csv_ends_with_the_two_columns():
    with open(REPO / "data" / "reference" / "hardware-specs.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header[-2:] == ["arch", "matrix_units"]


def test_docs_list_every_accepted_word():
    text = (REPO / "docs" / "hardware.md").read_text(encoding="utf-8")
    missing = [w for w in (*ARCHS, *MATRIX_UNITS) if f"`{w}`" not in text]
    assert not missing


def _toml(tmp_path, extra, name="My box"):
    p = tmp_path / "box.toml"
    p.write_text(f'name = "{name}"\nkind = "gpu"\nvendor = "NVIDIA"\nmemory_gb = 32\nbandwidth_gbps = 900\n'
                 f'fp32_tflops = 15.7\n{extra}', encoding="utf-8")
    return hardware_from_toml(p)


def test_a_stated_arch_drives_the_rules_whatever_the_name(tmp_path):
    # a V100 under another name: GV100 has 80 SMs of 64 FP32 lanes at 1.53 GHz boost (V100 whitepaper):
    # 15.7 TFLOPS / (2 x 64) = 122.7e9 SM cycles/s = 80 x 1.53 GHz within 0.3 %
    hw = _toml(tmp_path, 'arch = "volta"\n')
    assert fp32_lanes_per_core(hw) == 64
    assert core_cycles_per_s(hw) == pytest.approx(80 * 1.53e9, rel=0.005)
    # Volta: DP4A MMQ below 64 tokens, FP16 tensor cores (dequantise, cuBLAS) from 64 (ggml-cuda mmq.cuh)
    assert (mmq_unit(hw, 16), mmq_unit(hw, 64), has_tensor_cores(hw)) == ("dp4a", "", True)
    assert hw.matrix_units == ("tensor-fp16", "dp4a")
    assert any(d.startswith("matrix_units: tensor-fp16;dp4a, the units every volta part has") for d in hw.derived)
    # the name says P40 (Pascal, 128 lanes, DP4A at any batch); the stated arch wins
    p40 = _toml(tmp_path, 'arch = "turing"\n', name="NVIDIA Tesla P40")
    assert fp32_lanes_per_core(p40) == 64 and mmq_unit(p40, 512) == "mma"


def test_stated_matrix_units_are_read_as_given(tmp_path):
    hw = _toml(tmp_path, 'arch = "pascal"\nmatrix_units = ["tensor-int8", "dp4a"]\n')
    assert hw.matrix_units == ("tensor-int8", "dp4a") and mmq_unit(hw, 512) == "mma"
    assert _toml(tmp_path, 'arch = "pascal"\nmatrix_units = "dp4a; tensor-fp16"\n').matrix_units == ("dp4a", "tensor-fp16")


def test_a_file_without_arch_takes_the_name_and_says_so(tmp_path):
    hw = _toml(tmp_path, "", name="NVIDIA Tesla P40")
    assert hw.arch == "pascal" and mmq_unit(hw, 512) == "dp4a"
    assert "arch: pascal, ASSUMED from the name 'NVIDIA Tesla P40' (no arch stated)" in hw.derived
    unknown = _toml(tmp_path, "", name="My box")
    assert unknown.arch is None and any(d.startswith("arch: unknown") for d in unknown.derived)
    assert fp32_lanes_per_core(unknown) == 128           # NVIDIA of unknown arch: as before the arch was data
    by_id = Hardware(id="instinct-mi300x", name="My box", kind="gpu", vendor="AMD", memory_gb=192, bandwidth_gbps=5300)
    assert by_id.arch == "cdna3" and "arch: cdna3, ASSUMED from the name 'instinct mi300x' (no arch stated)" in by_id.derived


def test_a_prediction_says_when_the_arch_was_read_from_the_name(tmp_path):
    from tokspeed.predict import predict

    guessed = predict("llama-2-7b", _toml(tmp_path, "", name="NVIDIA Tesla P40"), quant="Q4_0")
    assert any("arch: pascal, ASSUMED from the name" in w for w in guessed.warnings)
    stated = predict("llama-2-7b", _toml(tmp_path, 'arch = "pascal"\n', name="NVIDIA Tesla P40"), quant="Q4_0")
    assert not stated.warnings
    assert stated.decode.tok_s == guessed.decode.tok_s        # the same arch: the same answer


@pytest.mark.parametrize("extra, words", [
    ('arch = "Volta"\n', "arch must be one of fermi, kepler"),
    ('arch = 7\n', "arch must be one of"),
    ('arch = "volta"\nmatrix_units = ["tensor-fp16", "warp-drive"]\n', "matrix_units 'warp-drive' not known"),
    ('arch = "volta"\nmatrix_units = 3\n', "matrix_units must be a list of words"),
])
def test_a_bad_value_is_one_error_naming_the_field_and_the_accepted_words(tmp_path, extra, words):
    with pytest.raises(UserError) as e:
        _toml(tmp_path, extra)
    assert words in str(e.value) and "\n" not in e.value.message
    assert "volta" in e.value.message or "tensor-fp16" in e.value.message     # the accepted words are listed


def test_a_wrong_case_arch_is_suggested(tmp_path):
    with pytest.raises(UserError) as e:
        _toml(tmp_path, 'arch = "Volta"\n')
    assert "volta" in e.value.suggestion


def test_memory_class_reads_the_memory_type_not_the_name():
    a100 = Hardware(id="x", name="NVIDIA A100 80GB PCIe", kind="gpu", vendor="NVIDIA", memory_gb=80, bandwidth_gbps=1935)
    assert a100.memory_type == "HBM" and memory_class(a100) == "hbm"        # inferred once, and said
    assert any(d.startswith("memory_type: HBM, ASSUMED from the name") for d in a100.derived)
    stated = Hardware(id="x", name="NVIDIA A100 80GB PCIe", kind="gpu", vendor="NVIDIA", memory_gb=80,
                      bandwidth_gbps=1935, memory_type="GDDR6")
    assert memory_class(stated) == "gddr"


@pytest.mark.parametrize("name,hbm", [
    ("AMD Instinct MI50 32GB (gfx906)", True),     # Vega 20 with four HBM2 stacks (AMD's MI50 data sheet)
    ("AMD Instinct MI25", True), ("AMD Radeon VII", True), ("AMD Radeon Pro VII", True), ("Radeon RX Vega 64", True),
    ("NVIDIA TITAN V", True), ("NVIDIA Quadro GV100", True), ("AMD Instinct MI300X", True),
    ("AMD Radeon RX 7900 XTX", False), ("AMD Radeon Pro W7900", False), ("NVIDIA GeForce RTX 4090", False),
    ("Xiaomi 14 Ultra", False), ("AMD Radeon RX 6900 XT", False),
    ("AMD Radeon Instinct MI6", False)])          # Polaris 10 with 16 GB of GDDR5
def test_hbm_only_parts_are_named_so(name, hbm):
    hw = Hardware(id="x", name=name, kind="gpu", vendor="AMD", memory_gb=16, bandwidth_gbps=1000)
    assert (memory_class(hw) == "hbm") is hbm


def test_family_is_the_catalog_arch():
    assert device_family("NVIDIA Tesla P100 PCIe 16GB", "NVIDIA") == "NVIDIA Pascal"     # pascal-gp100
    assert device_family("NVIDIA A100 80GB (SXM4/PCIe unstated)", "NVIDIA") == "NVIDIA Ampere"
    assert device_family("NVIDIA Grace CPU memory (GH200 superchip)", "NVIDIA") == "NVIDIA other"   # a CPU
    assert device_family("NVIDIA RTX 2000 Ada Generation", "NVIDIA") == "NVIDIA Ada"


@pytest.mark.parametrize("module", ["issue", "mmq", "memory", "compat"])
def test_no_engine_rule_reads_a_device_name_with_a_pattern(module):
    src = (REPO / "tokspeed" / "engines" / f"{module}.py").read_text(encoding="utf-8")
    assert not re.search(r"\bre\.(search|match|fullmatch|compile)\(.*name", src)
    assert "hw.name.lower()" not in src and "fnmatchcase(n," not in src
    assert module == "compat" or "import re" not in src
