"""The per-family signed-error table the fit writes into docs/calibration.md (tokspeed/calibration/family_bias.py):
medians computed by hand from made-up errors."""

from types import SimpleNamespace as NS

import numpy as np

from tokspeed.calibration.family_bias import MIN_FAMILY_ROWS, family_bias_table

NAN = float("nan")


def _row(arch, kind, source):
    return NS(hw=NS(arch=arch), kind=kind, source=source)


def _result():
    rows = [_row("rdna4", "decode", "a"), _row("rdna4", "decode", "a"), _row("rdna4", "decode", "b"),
            _row("RDNA4 ", "decode", "b"),          # the family is the arch, trimmed and lower-cased
            _row("xe2", "decode", "c"), _row("xe2", "decode", "c"), _row("xe2", "decode", "c")]
    ins = np.array([-10.0, 2.0, 4.0, 30.0, 1.0, 1.0, 1.0])
    pri = np.array([-40.0, -20.0, -10.0, 0.0, 50.0, 50.0, 50.0])
    src = np.array([-30.0, -25.0, -5.0, 5.0, 9.0, 9.0, 9.0])
    time = np.array([NAN, NAN, NAN, NAN, 3.0, 3.0, 3.0])
    return {"engine": "llama.cpp-vulkan", "rows": rows, "insample": ins, "prior_alone": pri,
            "pooled": {"source": {5.0: src}, "device": {5.0: src}, "time": {5.0: time}}}


def test_medians_by_hand_and_the_row_floor():
    assert MIN_FAMILY_ROWS == 4
    lines = family_bias_table([_result()], 5.0).splitlines()
    assert len(lines) == 3                                # header, rule, rdna4 (xe2 has 3 rows: below the floor)
    # rdna4 decode: 4 rows, 2 sources; in sample median(-10, 2, 4, 30) = 3; priors median(-40, -20, -10, 0) = -15;
    # by source median(-30, -25, -5, 5) = -15; no row later than the cutoff: "—"
    assert lines[2] == "| llama.cpp-vulkan | rdna4 | decode | 4 | 2 | +3 | -15 | -15 | — |"
    assert "xe2" not in "\n".join(lines)
