"""The built-in catalog: every entry validates, matches the reference CSV, and resolves by name."""

import csv
import importlib.util
import math
from collections import Counter
from pathlib import Path

import pytest

from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.datafile import DATA
from tokspeed.hardware.devices import all_hardware
from tokspeed.hardware.spec import KINDS, Hardware

REPO = Path(__file__).resolve().parent.parent
CALIBRATION_SOURCE = "validation/calibration.csv"


REFERENCE_CSV = REPO / "data" / "reference" / "hardware-specs.csv"  # shipped with the repository
_CAL = REPO / "data" / "validation" / "calibration.csv"               # shipped by the calibration work (#11)
CALIBRATION_CSV = _CAL if _CAL.is_file() else None


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("hw", all_hardware(), ids=lambda h: h.id)
def test_every_entry_validates_and_has_a_source(hw):
    again = Hardware.from_dict(hw.to_dict())
    assert again == hw
    assert hw.kind in KINDS
    assert hw.memory_gb > 0 and hw.bandwidth_gbps > 0
    assert hw.source.strip(), "every entry carries its source"
    assert get_hardware(hw.id) is hw
    assert get_hardware(hw.name) is hw
    assert get_hardware(hw.id.upper()) is hw
    if not hw.source.startswith(CALIBRATION_SOURCE):
        assert hw.notes.startswith("[conf:") and hw.confidence
    from tokspeed.hardware.catalog import lookup_hardware

    for alias in hw.aliases:  # an alias finds this device, or (shared) its default variant, whose note names it
        try:
            found, note = lookup_hardware(alias)
            assert found is hw or (note and hw.id in note)
        except UserError as e:
            assert "ambiguous" in str(e) and hw.id in str(e)


def test_ids_are_unique_and_short():
    ids = [h.id for h in all_hardware()]
    assert len(ids) == len(set(ids))
    assert all(i == i.lower() and " " not in i for i in ids)


def test_counts_by_kind_match_the_reference_csv():
    csv_kind = Counter(r["kind"] for r in _rows(REFERENCE_CSV))
    expected = {"gpu": csv_kind["gpu"], "soc": csv_kind["soc"], "cpu": csv_kind["cpu"],
                "accelerator": csv_kind["tpu"] + csv_kind["accelerator"]}
    got = Counter(h.kind for h in all_hardware() if not h.source.startswith(CALIBRATION_SOURCE))
    assert dict(got) == expected
    from tokspeed.hardware.links import all_links
    assert len(all_links()) == csv_kind["interconnect"]


def test_every_reference_row_is_in_the_catalog_with_its_numbers():
    for r in _rows(REFERENCE_CSV):
        if r["kind"] == "interconnect":
            continue
        hw = get_hardware(r["name"])
        per_die = any(d.startswith("bandwidth_gbps: one of") for d in hw.derived)
        assert hw.bandwidth_gbps == pytest.approx(float(r["bandwidth_GBps"]) / (2 if per_die else 1))
        assert hw.source == r["sources"] and hw.notes == r["notes"]
        assert hw.memory_type == r["memory_type"]
        for col, field in (("memory_GB", "memory_gb"), ("fp16_bf16_dense_TFLOPS", "fp16_tflops"),
                           ("fp8_dense_TFLOPS", "fp8_tflops"), ("int8_dense_TOPS", "int8_tops"),
                           ("tdp_W", "tdp_w"), ("release_year", "release_year"),
                           ("scale_up_link_GBps", "scale_up_gbps")):
            if r[col].strip() and not any(d.startswith(f"{field}:") for d in hw.derived):
                assert getattr(hw, field) == pytest.approx(float(r[col])), (r["name"], field)


def test_hand_checked_values():
    # RTX 4090: 384-bit x 21 Gbps / 8 = 1008 GB/s; 24 GB; Ada whitepaper FP16 tensor, FP32 accumulate 165.2
    g = get_hardware("rtx-4090")
    assert (g.bandwidth_gbps, g.memory_gb, g.fp16_tflops) == (1008, 24, 165.2)
    assert g.bandwidth_bytes_s == 384 / 8 * 21e9
    # H100 SXM: 3.35 TB/s HBM3, 989 dense FP16 (1979 is the 2:4-sparse headline)
    h = get_hardware("H100-SXM")
    assert (h.bandwidth_gbps, h.fp16_tflops) == (3350, 989)
    assert h.ridge_flops_per_byte == pytest.approx(989e12 / 3350e9)
    assert h.scale_up_per_direction_bytes_s == 450e9  # NVLink 4: 900 bidirectional
    # M2 Ultra 76-core: 1024-bit LPDDR5-6400 = 819.2 GB/s physical, Apple says 800
    m = get_hardware("m2-ultra-76")
    assert m.bandwidth_gbps == 800 and m.memory_gb == 192
    assert m.usable_bytes == pytest.approx(0.75 * 192 * 2**30)  # Metal working set above 36 GB
    # GeForce FP32-accumulate rate, not the 2x FP16-accumulate one
    assert get_hardware("rtx-3090").fp16_tflops == 71
    # dual-channel DDR5-5600: 2 channels x 8 bytes x 5600 MT/s
    assert get_hardware("ddr5-5600-2ch").bandwidth_gbps == pytest.approx(2 * 8 * 5600e6 / 1e9)
    assert get_hardware("tpu-v5e").kind == "accelerator" and get_hardware("gaudi-3").kind == "accelerator"


def test_required_ids_exist():
    for i in ("rtx-4090", "rtx-3090", "h100-sxm", "h100-pcie", "h200-sxm", "a100-80g-sxm", "a100-40g-sxm",
              "l40s", "mi300x", "m2-ultra-76", "m1-max-32", "m3-max-40", "m4-max-40", "ddr5-5600-2ch",
              "tpu-v5e", "gaudi-3"):
        assert get_hardware(i).id == i


def test_lookup_is_forgiving_about_case_and_separators():
    assert get_hardware("RTX 4090").id == "rtx-4090"
    assert get_hardware("rtx_4090").id == "rtx-4090"
    assert get_hardware("4090").id == "rtx-4090"
    assert get_hardware("nvidia geforce rtx 4090").id == "rtx-4090"
    assert get_hardware("M2 Ultra 76").id == "m2-ultra-76"


def test_ambiguous_short_names_take_the_common_variant_and_name_the_others():
    from tokspeed.hardware.catalog import lookup_hardware

    hw, note = lookup_hardware("h100")
    assert hw.id == "h100-sxm"
    for i in ("h100-pcie", "h100-nvl"):
        assert i in note
    assert lookup_hardware("a100")[0].id == "a100-80g-sxm"


def test_pascal_fp16_blank_and_no_fp16_accumulate_flag_without_tensor_cores():
    # GP102 (Tesla P40, GTX 1080 Ti): FP16 at 1/64 of FP32, the cell blank, so matmuls take the FP32 peak:
    # 3,840 CUDA cores x 2 x 1.531 GHz and 3,584 x 2 x 1.582 GHz; a GeForce GTX has no tensor cores, so no
    # FP16-accumulate rate to double
    for hw_id, fp32 in (("p40", 3840 * 2 * 1.531e9), ("gtx-1080-ti", 3584 * 2 * 1.582e9)):
        h = get_hardware(hw_id)
        assert h.fp16_tflops == 0 and not h.fp16_accumulate_2x
        assert h.matmul_flops == pytest.approx(fp32, rel=0.005)
    # TITAN RTX: 72 SMs x 1024 FP16 FLOPs/SM/clock x 1.77 GHz = 130.5 with FP32 accumulate at full rate
    t = get_hardware("titan-rtx")
    assert t.fp16_tflops * 1e12 == pytest.approx(72 * 1024 * 1.77e9, rel=0.005) and not t.fp16_accumulate_2x
    assert get_hardware("rtx-4060-ti-8g").fp16_accumulate_2x           # a GeForce RTX still is
    from tokspeed.hardware.catalog import lookup_hardware

    hw, note = lookup_hardware("rtx-4060-ti")                           # 8 GB and 16 GB: the 8 GB, 16 GB named
    assert hw.id == "rtx-4060-ti-8g" and "rtx-4060-ti-16g" in note


def test_unknown_name_suggests():
    with pytest.raises(UserError) as e:
        get_hardware("rtx-4099")
    assert "rtx-4090" in e.value.suggestion


def test_apple_binned_chip_compute_scales_with_gpu_cores():
    # 7 of 8 GPU cores at the same clock: 2.6 x 7/8 TFLOPS
    assert get_hardware("m1-7").fp16_tflops == pytest.approx(2.6 * 7 / 8)
    assert get_hardware("m2-ultra-60").fp16_tflops == pytest.approx(27.2 * 60 / 76, rel=1e-4)


@pytest.mark.skipif(CALIBRATION_CSV is None, reason="data/validation/calibration.csv not shipped yet")
def test_every_calibration_device_resolves_with_its_bandwidth():
    rows = _rows(CALIBRATION_CSV)
    for name in sorted({r["hardware"] for r in rows}):
        r = next(r for r in rows if r["hardware"] == name)
        hw = get_hardware(name)
        assert hw.bandwidth_gbps == pytest.approx(float(r["bandwidth_GBps"])), name
        assert hw.kind == r["hardware_kind"], name
        if r["fp16_TFLOPS"].strip():
            assert hw.fp16_tflops == pytest.approx(float(r["fp16_TFLOPS"])), name


@pytest.mark.skipif(CALIBRATION_CSV is None, reason="data/validation/calibration.csv not shipped yet")
def test_calibration_only_devices_cite_their_row():
    ref = {r["name"] for r in _rows(REFERENCE_CSV)}
    ids = {}
    for r in _rows(CALIBRATION_CSV):
        ids.setdefault(r["hardware"], r["id"])
    missing = {n: i for n, i in ids.items() if n not in ref}
    assert missing, "the calibration file names devices the reference table lacks"
    for name, first_row in missing.items():
        hw = get_hardware(name)
        assert hw.source.startswith(f"{CALIBRATION_SOURCE} row {first_row} ")


@pytest.mark.skipif(CALIBRATION_CSV is None, reason="data/validation/calibration.csv not shipped yet")
def test_regenerating_reproduces_the_committed_file(tmp_path):
    spec = importlib.util.spec_from_file_location("build_hw", REPO / "scripts" / "build_hardware_catalog.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "hardware.toml"
    assert mod.main([str(REFERENCE_CSV), "--calibration", str(CALIBRATION_CSV), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == DATA.read_text(encoding="utf-8")


def _build_module():
    spec = importlib.util.spec_from_file_location("build_hw", REPO / "scripts" / "build_hardware_catalog.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_reference_devices_regenerate_from_the_shipped_csv():
    """Without the calibration file, every reference device block rebuilds exactly as committed."""
    text = _build_module().render(REFERENCE_CSV, None)
    committed = DATA.read_text(encoding="utf-8")
    blocks = [b for b in text.split("\n\n") if b.startswith(("[[device]]", "[[link]]"))]
    assert len(blocks) == sum(1 for r in _rows(REFERENCE_CSV))
    for b in blocks:
        assert b in committed, b.splitlines()[1]


def test_numbers_are_finite():
    for hw in all_hardware():
        for v in (hw.fp16_tflops, hw.fp8_tflops, hw.int8_tops, hw.bandwidth_gbps, hw.host_link_gbps):
            assert math.isfinite(v)
