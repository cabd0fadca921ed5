"""calibration-3.csv: read beside calibration.csv, its flags understood, every row answered or said why not."""

import csv

from tokspeed.calibration.answered import unanswered, why_unanswered
from tokspeed.calibration.rows import CALIBRATION_CSVS, REPO_CSV3, load_rows, row_flags


def _lines(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_default_load_reads_both_files():
    rows = load_rows()
    assert len(rows) == sum(len(_lines(p)) for p in CALIBRATION_CSVS)
    assert {r.id for r in rows if r.id.startswith("c3-")} == {r["id"] for r in _lines(REPO_CSV3)}


def test_flags_are_split_on_bars():
    assert row_flags("MULTI_GPU|FA") == ["MULTI_GPU", "FA"]
    assert row_flags("DUPLICATE_OF=r0012") == ["DUPLICATE_OF"]
    rows = {r.id: r for r in load_rows(REPO_CSV3)}
    fa = [r for r in rows.values() if r.flags == "MULTI_GPU|FA"]
    assert fa and all(not r.skip.startswith("unknown flag") for r in fa)
    assert all(r.flash_attention for r in fa)
    offload = [r for r in rows.values() if "PARTIAL_CPU_OFFLOAD" in r.flags]
    assert offload and all(r.skip == "PARTIAL_CPU_OFFLOAD" for r in offload)


def test_multi_gpu_rows_keep_their_split():
    rows = [r for r in load_rows(REPO_CSV3) if r.n_devices == 2]
    assert len(rows) == sum(1 for r in _lines(REPO_CSV3) if r["n_devices"] == "2")
    assert {r.parallel for r in rows} == {"layer-split"}


def test_every_unanswered_row_has_a_group():
    rows = load_rows(REPO_CSV3)
    groups = unanswered(rows)
    assert set(groups) <= {"model", "quant", "engine", "device", "workload", "excluded", "error", "other"}
    assert "other" not in groups
    n = sum(len(ids) for d in groups.values() for ids in d.values())
    assert n == sum(why_unanswered(r) is not None for r in rows)
