"""A pass over a layer split times each stage size once: stages whose cuts of the pass are equal share one timing
(``scale.timing.layout_pass``), and the answer is the one stage-by-stage timing gives."""

from __future__ import annotations

import pytest

import tokspeed.scale.timing as st
from tokspeed.engines.profile import IDEAL
from tokspeed.ledger import forward_ops
from tokspeed.prediction_setup import resolve
from tokspeed.scale.options import ScaleOptions
from tokspeed.workload import Workload


def _resolved(gpus: int):
    work = Workload(prompt=4096, gen=1, context=0, batch=1)
    return resolve("llama-3.1-70b", "rtx-4090", "Q4_K_M", "f16", "llama.cpp-cuda", None,
                   ScaleOptions(gpus=gpus), work, None)


def test_equal_stages_are_timed_once_and_answer_as_each_alone(monkeypatch):
    r = _resolved(4)
    layout = r.setup.layout
    sizes = [s.n_layers for s in layout.stages]
    # llama.cpp's split of 80 layers + the output over 4 GPUs: layer il on GPU il * 4 // 81, so the first starts at
    # 0, 81/4 = 20.25 -> 21, 40.5 -> 41, 60.75 -> 61: 21, 20, 20 and 19 layers (+ the output)
    assert sizes == [21, 20, 20, 19]
    for depth, chunk in ((0, 512), (30000, 512), (5000, 1)):
        ops = forward_ops(r.spec, r.storage, r.kv_elem_bytes, 1, chunk, depth)
        calls = []
        real = st.pass_time
        monkeypatch.setattr(st, "pass_time", lambda *a, **k: calls.append(1) or real(*a, **k))
        memo = st.layout_pass(layout, ops, r.spec, r.quant, r.profile, 1, chunk, shared=True)
        # first (21 layers, embedding), the two middle stages (one cut), last (head): three timings for four stages
        assert len(calls) == 3
        monkeypatch.setattr(st, "pass_time", real)
        alone = st.layout_pass(layout, ops, r.spec, r.quant, r.profile, 1, chunk, shared=False)
        # (summed by segment or op by op: the same to the last bits of a double)
        assert memo.seconds == pytest.approx(alone.seconds, rel=1e-12)
        assert [s["seconds"] for s in memo.stages] == pytest.approx([s["seconds"] for s in alone.stages], rel=1e-12)
        ideal = st.layout_pass(layout, ops, r.spec, r.quant, IDEAL, 1, chunk, shared=True)
        assert ideal.seconds == pytest.approx(st.layout_pass(layout, ops, r.spec, r.quant, IDEAL, 1, chunk).seconds,
                                              rel=1e-12)
