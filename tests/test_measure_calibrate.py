"""Calibration fit: seconds per token = bytes / (bandwidth * eta) + overhead, by least squares."""

import pytest

from tokspeed.hardware.catalog import get_hardware, hardware_from_toml
from tokspeed.measure.calibrate import fit, load_calibration, store_calibration
from tokspeed.measure.profile import dumps_toml


def test_recovers_eta_and_overhead_from_exact_points():
    bw = 40.0  # GB/s
    pts = [(b, b / (bw * 1e9 * 0.6) + 0.002) for b in (1e9, 1.5e9, 2e9, 3e9)]
    cal = fit(pts, bw, "torch")
    assert cal.eta_memory == pytest.approx(0.6, rel=1e-9)
    assert cal.overhead_s == pytest.approx(0.002, rel=1e-9)
    assert cal.rms_rel_error == pytest.approx(0.0, abs=1e-12)
    # 2 GB at 40 GB/s x 0.6 = 83.33 ms, + 2 ms
    assert cal.seconds_per_token(2e9) == pytest.approx(2 / 24 + 0.002)


def test_single_byte_count_pins_overhead_to_zero():
    cal = fit([(2e9, 0.1), (2e9, 0.1)], 40.0, "torch")
    assert cal.overhead_s == 0.0
    assert cal.eta_memory == pytest.approx(0.5)   # 2 GB in 0.1 s = 20 GB/s of 40 GB/s


def _profile(tmp_path, name="Test CPU (measured)"):
    p = tmp_path / "local.toml"
    p.write_text(dumps_toml({"name": name, "kind": "cpu", "vendor": "AMD", "memory_gb": 24.0,
                             "bandwidth_gbps": 40.0, "measured": {"cpu_read_gbps": 40.0}, "calibration": {}}))
    return p


def test_store_then_load_through_local_profile(tmp_path, monkeypatch):
    p = _profile(tmp_path)
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(p))
    cal = fit([(1e9, 0.03), (2e9, 0.055)], 40.0, "torch")
    store_calibration(p, cal)
    hw = get_hardware("local")          # still loads as Hardware with the two extra tables present
    assert hw.bandwidth_gbps == 40.0
    got = load_calibration(hw, "torch")
    assert got is not None and got.eta_memory == pytest.approx(cal.eta_memory, rel=1e-5)
    assert load_calibration(p) is not None                       # by path, first backend
    assert load_calibration(hw, "llama.cpp") is None             # nothing fitted for that backend
    assert load_calibration(get_hardware("rtx-4090"), "torch") is None   # a catalog device never picks it up
    assert hardware_from_toml(p).name == "Test CPU (measured)"


def test_recovers_a_separate_kv_efficiency():
    bw = 40.0
    # steps reading w weight bytes and kv KV bytes: t = w / (40e9 * 0.8) + kv / (40e9 * 0.4) + 1 ms
    pts = [(w + kv, w / 32e9 + kv / 16e9 + 1e-3, kv) for w in (1e9, 2e9, 5e9) for kv in (0.0, 1e8, 4e8)]
    cal = fit(pts, bw, "torch")
    assert cal.eta_memory == pytest.approx(0.8, rel=1e-6)
    assert cal.eta_kv == pytest.approx(0.4, rel=1e-6)
    assert cal.overhead_s == pytest.approx(1e-3, rel=1e-6)
    # 2 GB of weights + 0.2 GB of KV: 62.5 ms + 12.5 ms + 1 ms
    assert cal.seconds_per_token(2.2e9, 0.2e9) == pytest.approx(0.0625 + 0.0125 + 0.001)


def test_the_calibration_records_the_attention_its_run_had(tmp_path):
    # llama.cpp runs record -fa; a run without the setting (torch) stores no key (TOML has no null)
    from tokspeed.measure.calibrate import Calibration, fit

    pts = [(4e9, 4e9 / 40e9 + 1e-3, 0.0), (5e9, 5e9 / 40e9 + 1e-3, 1e9), (6e9, 6e9 / 40e9 + 1e-3, 2e9)]
    assert fit(pts, 50.0, "llama.cpp", flash_attention=False).to_dict()["flash_attention"] is False
    assert "flash_attention" not in fit(pts, 50.0, "torch").to_dict()
    assert Calibration(**fit(pts, 50.0, "llama.cpp", flash_attention=True).to_dict()).flash_attention is True


def test_attention_traffic_beyond_one_read_by_hand():
    # llama-3-8b (32 layers, 32 query heads over 8 K/V heads of 128, F16 cache: 4,096 B per token per layer) with
    # llama.cpp's attention unfused on an RTX 4090: going D tokens deeper adds D x 4,096 B x 32 layers of cache
    # read again by 3 more query heads, the share kv_reread from memory, plus 32 x 32 heads x D scores of
    # 4 x 128 + 5 FLOPs at attn_bytes_per_flop; fused attention adds nothing
    from tokspeed.engines.profile import get_engine
    from tokspeed.measure.predicted import predict_point
    from tokspeed.resolve import resolve_model

    spec, hw = resolve_model("llama-3-8b")[0], get_hardware("rtx-4090")
    eng = get_engine("llama.cpp", hw, flash_attention=False)
    extra = {c: predict_point(spec, hw, "llama.cpp", "Q4_K_M", c, 1, 1, 0, None, False)["attn_extra_bytes_per_step"]
             for c in (1024, 5120)}
    D = 4096
    assert extra[5120] - extra[1024] == pytest.approx(D * 4096 * 32 * 3 * eng.kv_reread
                                                      + 32 * 32 * D * (4 * 128 + 5) * eng.attn_bytes_per_flop)
    assert predict_point(spec, hw, "llama.cpp", "Q4_K_M", 5120, 1, 1, 0, None, True)["attn_extra_bytes_per_step"] == 0
    # a calibration fitted net of that traffic predicts the step with it: (bytes - KV) at eta, KV + extra at eta_kv
    from tokspeed.measure.calibrate import Calibration

    cal = Calibration("llama.cpp", 0.8, 1e-3, 1008.0, 4, 0.0, eta_kv=0.5, flash_attention=False, attention_net=True)
    pt = predict_point(spec, hw, "llama.cpp", "Q4_K_M", 5120, 1, 1, 0, cal, False)
    b, kv, x = pt["bytes_per_step"], pt["kv_bytes_per_step"], pt["attn_extra_bytes_per_step"]
    assert x > 0 and 1 / pt["tok_s"] == pytest.approx((b - kv) / (1008e9 * 0.8) + (kv + x) / (1008e9 * 0.5) + 1e-3)
    # recalibrating over an older calibration (which zeroes the re-reads it holds) still counts the engine's own
    from dataclasses import replace

    old = replace(hw, calibration={"llama.cpp": {"eta_mem": 0.8, "eta_kv": 0.6}})
    assert get_engine("llama.cpp", old, flash_attention=False).kv_reread == 0.0
    again = predict_point(spec, old, "llama.cpp", "Q4_K_M", 5120, 1, 1, 0, None, False)["attn_extra_bytes_per_step"]
    assert again == pytest.approx(extra[5120])


def test_calibrating_counts_the_attention_traffic_as_kv(tmp_path):
    # a run whose steps took exactly weights / (BW x 0.8) + (KV + extra) / (BW x 0.5) + 1 ms: the calibration
    # recovers eta_kv = 0.5 net of the extra traffic, and its prediction of such a step is that time
    from types import SimpleNamespace

    from tokspeed.measure.runner import calibrate_run

    bw = 40.0
    points = []
    for w, kv, x in ((1e9, 1e8, 5e7), (1e9, 4e8, 2e8), (2e9, 2e8, 1e8), (3e9, 8e8, 4e8)):
        t = w / (bw * 1e9 * 0.8) + (kv + x) / (bw * 1e9 * 0.5) + 1e-3
        points.append({"predicted": {"bytes_per_step": w + kv, "kv_bytes_per_step": kv,
                                     "attn_extra_bytes_per_step": x}, "decode_step": {"median_s": t}})
    run = {"points": points, "backend": "llama.cpp", "model": {"id": "m"}, "quant": "Q4_K_M",
           "settings": {"contexts": [0], "flash_attention": False}}
    cal = calibrate_run(run, SimpleNamespace(bandwidth_gbps=bw), _profile(tmp_path))
    assert cal.attention_net and cal.flash_attention is False
    assert cal.eta_memory == pytest.approx(0.8, rel=1e-6) and cal.eta_kv == pytest.approx(0.5, rel=1e-6)
    assert load_calibration(tmp_path / "local.toml", "llama.cpp").attention_net is True
