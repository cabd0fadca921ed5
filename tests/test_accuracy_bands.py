"""Bands off the fitted data (engines/bands.py, calibration/holdout.py): a device of a vendor the backend has no rows
for gets the held-out-by-vendor band; a backend without a fit its prior's; explain says which."""

import math

import pytest

from tokspeed.calibration import holdout
from tokspeed.engines import bands
from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware

FAKE = {"llama.cpp-vulkan": {"vendors": ["NVIDIA"], "families": ["NVIDIA Ada"], "decode_unseen_vendor_pct": 180.0,
                             "prefill_unseen_vendor_pct": 250.0, "rows": 28}}


@pytest.fixture
def fake_bands(monkeypatch):
    monkeypatch.setattr(bands, "_bands", lambda: FAKE)


def test_unseen_vendor_widens_the_band(fake_bands):
    nv, amd = get_hardware("rtx-4090"), get_hardware("radeon-pro-w7900")
    base = get_engine("llama.cpp-vulkan")
    assert base.fitted
    on_nv = get_engine("llama.cpp-vulkan", nv)
    on_amd = get_engine("llama.cpp-vulkan", amd)
    assert on_nv.decode_error_pct == base.decode_error_pct
    assert on_amd.decode_error_pct == max(base.decode_error_pct, 180.0)
    assert on_amd.prefill_error_pct == max(base.prefill_error_pct, 250.0)
    assert bands.band_basis(on_amd, amd)["basis"] == "unseen-vendor"
    assert bands.band_basis(on_nv, nv)["basis"] == "fitted"


def test_a_backend_without_a_fit_says_prior(fake_bands):
    hw = get_hardware("radeon-pro-w7900")
    prof = get_engine("ik_llama.cpp-cuda")
    assert bands.band_basis(prof, hw)["basis"] == "prior"


class _Row:
    def __init__(self, vendor, kind):
        self.kind = kind
        self.hw = type("H", (), {"vendor": vendor})()


def test_unseen_vendor_band_is_the_p90_of_held_out_errors():
    rows = [_Row("A", "decode") for _ in range(10)] + [_Row("B", "decode") for _ in range(10)]
    lovo = [float(i) for i in range(1, 21)]          # |errors| 1 .. 20 %
    res = {"rows": rows, "lovo": lovo}
    # p90 of 1..20 by linear interpolation: 18.1
    assert holdout.unseen_vendor_band(res, "decode", 50.0) == pytest.approx(18.1)
    # fewer than MIN_ROWS rows: the prior's band is the floor
    assert holdout.unseen_vendor_band({"rows": rows[:5], "lovo": lovo[:5]}, "decode", 50.0) == 50.0
    # coverage: each vendor's rows against the other vendor's p90 (A: 1..10 vs B's 19.1 -> all inside;
    # B: 11..20 vs A's p90 9.1 -> none inside)
    assert holdout.band_coverage(res, "decode", {}) == 50.0
    assert math.isnan(holdout.band_coverage(res, "prefill", {}))
