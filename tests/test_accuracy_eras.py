"""Engine eras and memory technology: the biases of issue 11 checked against published figures and
physical orderings, and the engine_version API."""

import inspect
import math

import pytest

from tokspeed.engines.eras import build_month, era_of
from tokspeed.engines.memory import memory_class
from tokspeed.engines.profile import get_engine
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.devices import all_hardware
from tokspeed.hardware.spec import Hardware
from tokspeed.predict import predict


def decode(model, hw_id, quant, version=None, engine="llama.cpp"):
    hw = get_hardware(hw_id)
    return predict(model, hw, quant=quant, engine=get_engine(engine, hw, version=version), prompt=0, gen=128).decode


# ---- versions -----------------------------------------------------------------------------------


def test_only_ascii_digits_make_a_version():
    # Python's \d matches any Unicode digit and int() reads them: "２０２５" (full-width) must not become build 2025
    for v in ("２０２５", "b６０００", "２０２５-０８"):
        with pytest.raises(UserError, match="neither a build number nor a year-month"):
            era_of("llama.cpp-cuda", v)


def test_build_numbers_map_to_the_months_printed_beside_them():
    # dated rows of data/validation/calibration.csv: b1988 in a 2024-01 table, b5163 in 2025-04, b7948 in 2026-02
    assert build_month("llama.cpp-cuda", 1988) == "2024-01"
    assert build_month("llama.cpp-cuda", 5163) == "2025-04"
    assert build_month("llama.cpp-cuda", 7948) == "2026-02"
    # calibration-3.csv: the Arc Pro B70 toolbox's b9039 logs, system_info 2026-05-06; b8676 between: 2026-02 +
    # round(3 x 728 / 1091 = 2.002) -> 2026-04 (every build past b7948 read as 2026-02 before the anchor)
    assert build_month("llama.cpp-sycl", 9039) == "2026-05"
    assert build_month("llama.cpp-cuda", 8676) == "2026-04"


@pytest.mark.parametrize("version,era", [("b1500", "2023"), ("1500", "2023"), ("2023-12", "2023"),
                                         ("2024-01", "2024"), ("b3000", "2024"), ("b6000", "2025"),
                                         ("2025-08", "2025"), ("2026-02", "2025"), ("2024", "2024")])
def test_versions_resolve_to_eras(version, era):
    assert era_of("llama.cpp-cuda", version) == era
    assert get_engine("llama.cpp", get_hardware("rtx-4090"), version=version).version == era


def test_default_is_the_newest_fitted_era():
    assert get_engine("llama.cpp-cuda").version == "2025"
    assert get_engine("llama.cpp-metal").version == "2025"
    assert get_engine("vllm").version == ""


def test_an_era_without_rows_takes_the_nearest_fitted_one_and_says_so():
    # llama.cpp-vulkan's rows are from 2024 and (calibration-3.csv) 2025-26: a 2023 build gets the nearest fitted
    # era's values, labelled 2024; the newest is 2025
    assert get_engine("llama.cpp-vulkan", version="2023").version == "2024"
    for v in (None, "b6000"):
        assert get_engine("llama.cpp-vulkan", version=v).version == "2025"
    # an engine with priors only (no fitted era) keeps its one set of values under the asked label
    assert get_engine("llama.cpp-cpu", version="b1500").version == "2023"
    assert get_engine("llama.cpp-cpu", version="b1500").fixed_s == get_engine("llama.cpp-cpu").fixed_s


@pytest.mark.parametrize("engine,version", [("llama.cpp-cuda", "2022-05"), ("llama.cpp-cuda", "banana"),
                                            ("llama.cpp-cuda", "2025-13"), ("vllm", "b6000")])
def test_bad_versions_are_user_errors_with_a_suggestion(engine, version):
    with pytest.raises(UserError) as e:
        get_engine(engine, version=version)
    assert e.value.suggestion


def test_a_2023_build_is_slower_than_a_2025_build_on_a_4090():
    # same RTX 4090, llama-2-7b Q4_0: 2023 builds ~150 tok/s, 2025 builds ~189 (issue 11, calibration rows)
    old = decode("llama-2-7b", "rtx-4090", "Q4_0", version="2023-11").tok_s
    new = decode("llama-2-7b", "rtx-4090", "Q4_0").tok_s
    assert 1.1 < new / old < 1.45
    assert 165 < new < 215


# ---- memory technology --------------------------------------------------------------------------


def test_memory_class_from_catalog_memory_type_and_name():
    def hw(name, kind="gpu", mt=""):
        return Hardware(id="x", name=name, kind=kind, vendor="NVIDIA", memory_gb=1, bandwidth_gbps=1,
                        memory_type=mt)
    assert memory_class(hw("x", mt="HBM3e (12-high)")) == "hbm"
    assert memory_class(hw("x", mt="GDDR6X")) == "gddr"
    assert memory_class(hw("x", kind="soc", mt="LPDDR5X-8533 (256-bit)")) == "lpddr"
    assert memory_class(hw("x", kind="cpu", mt="DDR5 RDIMM")) == "ddr"
    assert memory_class(hw("NVIDIA A100 80GB PCIe")) == "hbm"       # blank memory_type: by name
    assert memory_class(hw("NVIDIA GeForce RTX 3090")) == "gddr"
    assert memory_class(hw("Apple M2 Ultra", kind="soc")) == "lpddr"


def test_rtx_5090_is_about_1_5x_rtx_4090_on_llama2_7b_q4_0():
    # public 2025 llama-bench tables (llama.cpp CUDA scoreboard, tg128, llama 7B Q4_0): RTX 5090 about
    # 50 % above RTX 4090 (issue 11). Both GDDR: the ratio comes from 1792 vs 1008 GB/s less fixed costs.
    # The 5090's family (blackwell) has 4 fitted rows, all prefill: its efficiencies are pooled toward the priors by
    # w = 4 / (4 + k) (engines/pooling.py) while the 4090's (ada, 340 rows) are the fit. Its per-kernel and per-step
    # costs pool by the NVIDIA rows (688): pooled by the 4 rows they were the priors' pre-CUDA-graph ones and the
    # ratio read 1.23 at k = 5 (1.35 at k = 2, 1.18 at k = 10).
    r = decode("llama-2-7b", "rtx-5090", "Q4_0").tok_s / decode("llama-2-7b", "rtx-4090", "Q4_0").tok_s
    assert 1.3 < r < 1.7


def test_hbm_parts_order_by_core_cycles_and_bandwidth_f16_8b():
    ids = ["a100-80g-sxm", "h100-sxm", "h200-sxm", "b200"]
    tok = [decode("llama-3.1-8b", i, "F16").tok_s for i in ids]
    assert tok == sorted(tok) and len(set(tok)) == 4
    # no common GB/s ceiling: each part is bounded by its own SMs x clock (tokspeed.engines.issue) and its
    # own HBM; H200 (same SMs and clock as H100 SXM, 4.8 vs 3.35 TB/s) still gains from its memory
    assert tok[2] / tok[1] > 1.02
    assert tok[0] > 50        # A100 at ~half its 2 TB/s: 16 GB -> ~65 tok/s, not the old ~60 on every part


def test_more_bandwidth_of_the_same_technology_is_never_slower():
    """Within a memory technology, kind, vendor and architecture family (the fit reaches a device through its family:
    engines/pooling.py, a family without rows answering from the priors), a catalog device with more bandwidth and no
    less compute decodes at least as fast (same engine era, same model): no ceiling makes a part with more of
    everything come out slower."""
    from tokspeed.engines.pooling import arch_family

    groups = {}
    for hw in all_hardware():
        if hw.kind in ("gpu", "soc") and hw.vendor in ("NVIDIA", "Apple"):
            groups.setdefault((hw.kind, hw.vendor, memory_class(hw), arch_family(hw)), []).append(hw)
    checked = 0
    for devs in groups.values():
        tok = {h.id: predict("llama-2-7b", h, quant="Q4_0", engine=get_engine("llama.cpp", h), prompt=0,
                             gen=16).decode.tok_s for h in devs}
        for a in devs:
            for b in devs:
                if (b.bandwidth_gbps > a.bandwidth_gbps and b.fp16_tflops >= a.fp16_tflops
                        and b.fp32_tflops >= a.fp32_tflops):
                    assert tok[b.id] >= tok[a.id] * (1 - 1e-9), (a.id, tok[a.id], b.id, tok[b.id])
                    checked += 1
    assert checked > 50


def test_engine_version_reaches_predict_and_json():
    if "engine_version" not in inspect.signature(predict).parameters:
        pytest.skip("predict(engine_version=...) comes with the core branch")
    p = predict("llama-2-7b", "rtx-4090", quant="Q4_0", engine_version="b1500")
    assert p.to_dict()["engine_version"] == "2023"
    assert predict("llama-2-7b", "rtx-4090", quant="Q4_0").to_dict()["engine_version"] == "2025"
    assert math.isfinite(p.decode.tok_s)


def test_cli_engine_version_flag():
    import json
    import subprocess
    import sys

    if "engine_version" not in inspect.signature(predict).parameters:
        pytest.skip("predict(engine_version=...) comes with the core branch")
    base = [sys.executable, "-m", "tokspeed", "predict", "llama-2-7b", "--hardware", "rtx-4090", "-q", "Q4_0"]
    r = subprocess.run(base + ["--engine-version", "b1500", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["engine_version"] == "2023"
    r = subprocess.run(base + ["--engine-version", "2021-01"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "tokspeed: error:" in r.stderr


def test_explain_takes_the_engine_version_and_its_levers_keep_it():
    from tokspeed.explain import explain

    hw = get_hardware("rtx-4090")
    old = explain("llama-2-7b", hw, quant="Q4_0", engine_version="b1500")
    new = explain("llama-2-7b", hw, quant="Q4_0")
    assert old.prediction.engine_version == "2023" and new.prediction.engine_version == "2025"
    # a 2023 build is slower at short context (~150 vs ~189 tok/s on the rows: its fixed costs), so the
    # levers at the explained context must be slower in the 2023 explanation; the context lever reads a long
    # KV cache, where the fit gives 2023 builds a higher bandwidth share (era_mem 1.12), so it is left out
    pairs = [(a, b) for a, b in zip(old.levers, new.levers) if a.lever != "context"]
    assert len(pairs) == 3
    for a, b in pairs:
        assert a.tok_s < b.tok_s, (a.lever, a.tok_s, b.tok_s)
