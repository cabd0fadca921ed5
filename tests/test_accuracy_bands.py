"""Bands off the fitted data (engines/bands.py, calibration/holdout.py): each distance term is the p90 of held-out
|error| / band; a device of an unseen vendor, an engine without a fit, an unseen format, a deeper context, MoE on a
backend without MoE rows and several devices stretch the band by their factor; explain says which applied."""

import math

import pytest

from tokspeed.calibration import holdout
from tokspeed.engines import bands
from tokspeed.engines.profile import get_engine
from tokspeed.hardware.catalog import get_hardware

FAKE = {"terms": {"decode": {"unseen_backend": 2.5, "unseen_format": 1.5, "deep_context": 1.2, "moe_unseen": 1.4,
                             "multi_device": 1.3, "unseen_vendor": 2.0},
                  "prefill": {"unseen_backend": 3.0, "multi_device": 1.1}},
        "llama.cpp-vulkan": {"fitted": True, "vendors": ["NVIDIA"], "families": ["NVIDIA Ada"], "formats": ["kquant"],
                             "max_context": 4096, "moe": False, "rows": 28, "decode_unseen_vendor": 3.0},
        "llama.cpp-cpu": {"fitted": False, "rows": 40, "decode_unseen_backend": 2.0}}


@pytest.fixture
def fake_bands(monkeypatch):
    import importlib

    setup = importlib.import_module("tokspeed.prediction_setup")
    setup._ENGINES.clear()              # profiles resolved with another band table
    monkeypatch.setattr(bands, "_bands", lambda: FAKE)
    yield
    setup._ENGINES.clear()


def _fitted(engine):
    import tomllib
    from pathlib import Path

    with open(Path(bands.__file__).parent / "fitted.toml", "rb") as f:
        return tomllib.load(f)[engine]


def test_an_unseen_architecture_family_gets_the_priors_and_their_held_out_band(fake_bands):
    nv, amd = get_hardware("rtx-4090"), get_hardware("radeon-pro-w7900")
    fit = _fitted("llama.cpp-vulkan")
    if "arch_rows" not in fit:
        pytest.skip("fitted.toml written without pooling")
    assert "rdna3" not in fit["arch_rows"] and fit["arch_rows"]["ada"] > 0
    base = get_engine("llama.cpp-vulkan")
    assert base.fitted
    on_nv, on_amd = get_engine("llama.cpp-vulkan", nv), get_engine("llama.cpp-vulkan", amd)
    # no rows of its family: the priors, with the spread of the priors on families held out of the fit; no vendor
    # term on top (that spread is what an unseen family measures)
    assert not on_amd.fitted and on_amd.arch_rows == 0
    assert on_amd.decode_error_pct == pytest.approx(fit["decode_unseen_pct"])
    assert on_amd.prefill_error_pct == pytest.approx(fit["prefill_unseen_pct"])
    b = bands.band_basis(on_amd, amd)
    assert b["basis"] == "prior" and b["decode_terms"] == [] and "architecture family" in b["detail"]
    # rows of its family: the fitted band pooled toward that spread by w = n / (n + k)
    n, k = fit["arch_rows"]["ada"], fit["pool_rows"]
    w = n / (n + k) if k else 1.0
    assert on_nv.decode_error_pct == pytest.approx(fit["decode_unseen_pct"] ** (1 - w) * fit["decode_error_pct"] ** w)
    assert bands.band_basis(on_nv, nv)["decode_terms"] == []


def test_an_unseen_backend_gets_the_wider_band(fake_bands):
    hw = get_hardware("rtx-4090")
    prior = get_engine("llama.cpp-cpu")
    assert not prior.fitted
    # llama.cpp-cpu runs on the host CPU: whatever its device, the unseen-backend factor stretches its prior band
    cpu = get_engine("llama.cpp-cpu", hw)
    terms = bands.device_terms(cpu, hw, "decode")
    assert [t[:2] for t in terms] == [("unseen_backend", 2.0)]                      # its own (leave-self-out)
    assert bands.device_terms(cpu, hw, "prefill")[0][1] == 3.0                       # the pooled one
    ik = get_engine("ik_llama.cpp-cuda")
    assert bands.device_terms(ik, hw, "decode")[0][:2] == ("unseen_backend", 2.5)
    assert bands.device_terms(get_engine("vllm"), hw, "decode") == []               # not a llama.cpp engine


def test_workload_terms_multiply(fake_bands):
    prof = get_engine("llama.cpp-vulkan")
    q = dict(moe=True, format_group="legacy", context=8192, n_devices=2)
    terms = bands.workload_terms(prof, "decode", **q)
    assert [t for t, _, _ in terms] == ["unseen_format", "deep_context", "moe_unseen", "multi_device"]
    assert bands.stated_pct(prof, "decode", **q) == pytest.approx(prof.decode_error_pct * 1.5 * 1.2 * 1.4 * 1.3)
    # inside the data: no term
    assert bands.workload_terms(prof, "decode", moe=False, format_group="kquant", context=4096, n_devices=1) == []
    # a prefill term the table lacks is 1; the one it has applies
    assert bands.stated_pct(prof, "prefill", **q) == pytest.approx(prof.prefill_error_pct * 1.1)


def test_predict_states_the_widened_band(fake_bands):
    from tokspeed.predict import predict

    p = predict("llama-3.1-8b", "rtx-4090", quant="Q4_0", engine="llama.cpp-vulkan", prompt=0, gen=16,
                context=8192)
    band = p.engine_profile.decode_error_pct / 100 * 1.5 * 1.2       # unseen format (legacy), deep context
    # the slowest measurement within the band: |predicted - measured| / measured = band
    assert p.decode.tok_s_low == pytest.approx(p.decode.tok_s / (1 + band))
    assert p.decode.tok_s_low > 0


def test_explain_prints_the_parts(fake_bands):
    from tokspeed.explain import explain
    from tokspeed.report.explain_table import ridge_line

    e = explain("llama-3.1-8b", "rtx-4090", quant="Q4_0", engine="llama.cpp-vulkan", context=8192,
                with_levers=False)
    line = ridge_line(e.prediction, e.journey)
    assert "× 1.50 unseen format" in line and "× 1.20 deep context" in line
    d = e.to_dict()["band"]
    assert [t["term"] for t in d["decode_terms"]] == ["unseen_format", "deep_context"]
    assert d["decode_pct"] == pytest.approx(d["decode_base_pct"] * 1.5 * 1.2)
    # a device of a family the fit lacks: the priors, and explain says what its band rests on
    e = explain("llama-3.1-8b", "radeon-pro-w7900", quant="Q4_0", engine="llama.cpp-vulkan", with_levers=False)
    d = e.to_dict()["band"]
    assert d["basis"] == "prior" and "held-out rows" in d["detail"]


class _Row:
    def __init__(self, vendor, kind, engine="x"):
        self.kind, self.engine = kind, engine
        self.hw = type("H", (), {"vendor": vendor})()


def test_ratio_factor_by_hand():
    errs = [float(i) for i in range(1, 21)]          # |errors| 1 .. 20 % against a band of 10 %: ratios 0.1 .. 2.0
    # p90 of 0.1 .. 2.0 by linear interpolation: 0.1 + 0.9 * 19 * 0.1 = 1.81
    assert holdout.ratio_factor(errs, [10.0] * 20) == pytest.approx(1.81)
    assert holdout.ratio_factor(errs, [100.0] * 20) == 1.0            # a term never narrows a band
    assert holdout.ratio_factor(errs[:9], [10.0] * 9) is None          # fewer than MIN_ROWS
    assert holdout.ratio_factor([math.nan] * 20, [10.0] * 20) is None


def test_coverage_by_hand_on_synthetic_residuals():
    # a backend of two vendors, 10 decode rows each, fitted band 10 %; LOVO errors: A 1..10 %, B 11..20 %
    rows = [_Row("A", "decode") for _ in range(10)] + [_Row("B", "decode") for _ in range(10)]
    res = {"engine": "x", "fitted": True, "rows": rows, "lovo": [float(i) for i in range(1, 21)],
           "band": {"decode": 10.0, "prefill": 10.0}}
    # own factor: p90 of 0.1 .. 2.0 = 1.81
    assert holdout.vendor_factor(res, "decode") == pytest.approx(1.81)
    # nested: A's rows get B's factor (p90 of 1.1 .. 2.0 = 1.91 -> band 19.1: all 10 inside); B's rows A's
    # (p90 of 0.1 .. 1.0 = 0.91 -> at least 1: band 10: none inside) -> 50 %, median band (19.1 + 10) / 2
    n, cov, width = holdout._cover(holdout.nested_vendor_pairs([res], res, "decode"))
    assert (n, cov) == (20, 50.0) and width == pytest.approx((19.1 + 10.0) / 2)


def test_bands_data_writes_the_factors_through_one_toml_writer():
    import tomllib

    rows = [_Row("AB"[i % 2], "decode") for i in range(90)]
    for r in rows:
        r.family, r.quant, r.context = r.hw.vendor, "Q4_0", 512
    # a fitted backend x: held out by vendor 15 % off against its fitted band of 10 %; its priors 40 % against 20 %
    fit = {"engine": "llama.cpp-x", "fitted": True, "rows": rows, "lovo": [15.0] * 90,
           "band": {"decode": 10.0, "prefill": 10.0}, "moe": [False] * 90,
           "prior_err": [40.0] * 90, "prior_band": {"decode": 20.0, "prefill": 20.0},
           "loco": {t: [math.nan] * 90 for t in holdout.CONDITIONS}, "multi_rows": [], "multi_err": [],
           "multi_base": []}
    # an engine y without a fit: 9 rows (too few for a factor of its own), its priors 30 % off against 10 %
    cpu = {"engine": "llama.cpp-y", "fitted": False, "rows": [_Row("C", "decode") for _ in range(9)],
           "prior_err": [30.0] * 9, "prior_band": {"decode": 10.0, "prefill": 10.0}}
    data = tomllib.loads(holdout.bands_toml([fit, cpu]))
    assert data["llama.cpp-x"]["decode_unseen_vendor"] == pytest.approx(1.5)
    assert "prefill_unseen_vendor" not in data["llama.cpp-x"]           # no prefill rows
    assert data["llama.cpp-x"]["formats"] == ["legacy"] and data["llama.cpp-x"]["max_context"] == 512
    # y's unseen-backend factor: the other engine's priors, 40 / 20 = 2.0 (its own 9 rows are too few)
    assert data["llama.cpp-y"]["decode_unseen_backend"] == pytest.approx(2.0)
    # pooled, each engine weighing the same: 90 ratios of 2.0 and 9 of 3.0 -> p90 3.0 (unweighted it would be 2.0)
    assert data["terms"]["decode"]["unseen_backend"] == pytest.approx(3.0)
    assert holdout.ratio_factor([40.0] * 90 + [30.0] * 9, [20.0] * 90 + [10.0] * 9) == pytest.approx(2.0)
