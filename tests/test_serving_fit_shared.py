"""scripts/fit_serving.py's shared constants: one set per device vendor over every server engine's rows, pulled toward
the prior. Synthetic rows: the simulator is off by a factor per device vendor (its kernels), not per engine, so the
shared fit gives the vendor's factor back, and an engine left out is predicted exactly from the others."""

import importlib.util
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fit_serving.py"
K = {"h100-sxm": math.exp(0.3), "mi300x": math.exp(-0.2)}     # simulated / measured step time per vendor's device


@pytest.fixture(scope="module")
def fs():
    spec = importlib.util.spec_from_file_location("fit_serving", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(fs):
    groups = [("sglang", "h100-sxm"), ("sglang", "mi300x"), ("tensorrt-llm", "h100-sxm"), ("vllm", "mi300x")]
    cases, preds = [], []
    for e, hw in groups:
        for j in range(10):
            tpot, tok = 10.0 + j, 1000.0 + 100 * j
            cases.append(SimpleNamespace(id=f"{e}-{hw}-{j}", source=f"{e}-{hw}", engine=e, hardware=hw,
                                         tok_s_per_gpu=tok, tpot_ms=tpot, ttft_ms=None))
            preds.append({"tok_s_per_gpu": tok / K[hw], "tpot_ms": tpot * K[hw], "ttft_ms": None})
    return cases, {o: preds for o in fs.OVERHEAD_GRID}


def test_one_entry_per_vendor_gives_the_vendors_factor(fs):
    cases, sims = _rows(fs)
    table = fs.fit_groups(list(range(len(cases))), cases, sims)
    assert set(table) == {"serving@nvidia", "serving@amd", "sglang@nvidia", "tensorrt-llm@nvidia", "sglang@amd",
                          "vllm@amd"}       # every engine has 10 rows on its vendor: a gpu_scale of its own
    for key in ("sglang@nvidia", "tensorrt-llm@nvidia"):  # off by the vendor's factor: no pull away from the shared one
        assert table[key]["gpu_scale"] == pytest.approx(math.exp(-0.3), rel=1e-9)
    # |log(s K)| weighs 2 (tok/s and TPOT), the pull to the prior SHRINK < 2: the optimum is s = 1 / K exactly
    assert table["serving@nvidia"]["gpu_scale"] == pytest.approx(math.exp(-0.3), rel=1e-9)
    assert table["serving@amd"]["gpu_scale"] == pytest.approx(math.exp(0.2), rel=1e-9)
    assert table["serving@nvidia"]["link_scale"] == 1.0 and table["serving@nvidia"]["step_s"] == 0.0   # the priors


def test_an_engine_left_out_takes_the_other_engines_constants(fs):
    cases, sims = _rows(fs)
    idx = [i for i, c in enumerate(cases) if c.engine == "tensorrt-llm"]
    errs = fs.rel_errors(idx, cases, sims, fs.held_out_engine("tensorrt-llm", cases, sims))
    assert max(errs["tpot_ms"]) < 1e-9 and max(errs["tok_s_per_gpu"]) < 1e-9


def test_the_prior_wins_a_tie():
    spec = importlib.util.spec_from_file_location("fit_serving", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.prior_distance((0.0, 1.0), 1.0) == 0.0
    assert mod.prior_distance((1e-3, 2.0), math.e) == pytest.approx(mod.SHRINK * (1 + math.log(2) + math.e))
