"""scripts/fit_serving.py's pooled pairs: an engine without rows on a vendor it runs on takes the pair of the rows
that predict better held out. Synthetic rows: the simulator is off by a factor per device vendor (its kernels), not
per engine, so the vendor-pooled rule must win and give the vendor's factor back."""

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
    # sglang on both vendors, tensorrt-llm on NVIDIA only, vllm on AMD only (as the shared CSV)
    groups = [("sglang", "h100-sxm"), ("sglang", "mi300x"), ("tensorrt-llm", "h100-sxm"), ("vllm", "mi300x")]
    cases, preds = [], []
    for e, hw in groups:
        for j in range(10):            # MIN_GROUP rows: a pair of its own
            tpot, tok = 10.0 + j, 1000.0 + 100 * j
            cases.append(SimpleNamespace(id=f"{e}-{hw}-{j}", source=f"{e}-{hw}", engine=e, hardware=hw,
                                         tok_s_per_gpu=tok, tpot_ms=tpot, ttft_ms=None))
            preds.append({"tok_s_per_gpu": tok / K[hw], "tpot_ms": tpot * K[hw], "ttft_ms": None})
    return cases, {o: preds for o in fs.OVERHEAD_GRID}


def test_vendor_pooling_wins_and_gives_the_vendors_factor(fs):
    cases, sims = _rows(fs)
    rule, errs, _ = fs.pool_rule(cases, sims)
    assert rule == "vendor"
    assert max(errs["vendor"]["tpot_ms"]) < 1e-9                 # the other engines on the vendor: exact
    # sglang on NVIDIA from its AMD pair (x e^0.2 on e^0.3): e^0.5 - 1 off; on AMD from its NVIDIA pair: 1 - e^-0.5
    got = sorted({round(x, 9) for x in errs["engine"]["tpot_ms"]})
    assert got == pytest.approx([1 - math.exp(-0.5), math.exp(0.5) - 1], rel=1e-6)
    table = fs.fit_groups(list(range(len(cases))), cases, sims)
    assert "vllm@nvidia" not in table
    pooled = fs.pooled_entries(table, cases, sims, rule)
    assert set(pooled) == {"vllm@nvidia"}                       # tensorrt-llm runs on NVIDIA only: no @amd
    assert pooled["vllm@nvidia"]["gpu_scale"] == pytest.approx(math.exp(-0.3), rel=1e-9)
    assert pooled["vllm@nvidia"]["pooled"] == "vendor" and pooled["vllm@nvidia"]["rows"] == 20
