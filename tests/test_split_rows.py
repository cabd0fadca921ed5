"""A layer split run in turn is its device's own evidence (tokspeed/calibration/split_rows.py): which multi-device
rows the fit takes, the hand-off time it adds (by hand), the fit's evaluator equal to predict on them under any
profile, and no multi-device band term where the fit has such rows."""

from dataclasses import replace

import pytest

from tokspeed.predict import predict
from tokspeed.calibration.evaluate import predicted_tok_s
from tokspeed.calibration.rows import load_rows
from tokspeed.calibration.split_rows import handoff_s, stages_in_turn
from tokspeed.engines.profile import get_engine, prior_profile
from tokspeed.scale.interconnect import SYNC_LATENCY_S, host_link


@pytest.fixture(scope="module")
def rows():
    return {r.id: r for r in load_rows()}


def test_which_splits_run_in_turn():
    args = dict(n_devices=2, prompt=512, batch=1, ubatch=512, n_batch=2048, era="2025")
    assert stages_in_turn("llama.cpp-cuda", "layer-split", metric="decode", **args)
    assert stages_in_turn("llama.cpp-cuda", "layer-split", metric="prefill", **args)       # one micro-batch
    assert not stages_in_turn("llama.cpp-cuda", "tp", metric="decode", **args)               # row split
    assert not stages_in_turn("llama.cpp-cuda", "layer-split", metric="decode", **{**args, "batch": 4})
    assert not stages_in_turn("llama.cpp-cuda", "layer-split", metric="decode", **{**args, "n_devices": 1})
    deep = {**args, "prompt": 2048}                     # four micro-batches of 512 in one call of 2048
    assert not stages_in_turn("llama.cpp-cuda", "layer-split", metric="prefill", **deep)      # pipelined (PR #6017)
    assert stages_in_turn("llama.cpp-cuda", "layer-split", metric="prefill", **{**deep, "era": "2023"})  # before it
    assert stages_in_turn("llama.cpp-vulkan", "layer-split", metric="prefill", **deep)  # copies through host memory
    assert stages_in_turn("llama.cpp-cuda", "layer-split", metric="prefill", **{**deep, "ubatch": 2048})
    assert not stages_in_turn("vllm", "layer-split", metric="decode", **args)


def test_the_fit_takes_the_r9700_pairs_and_leaves_the_row_split(rows):
    assert rows["c3-0092"].skip == "" and rows["c3-0092"].n_devices == 2        # Vulkan decode, two R9700s
    assert rows["c3-0093"].skip == ""          # Vulkan pp2048 at -ub 512: the stages take each micro-batch in turn
    assert rows["r1571"].skip == "multi-device"                                  # 2023 row split (tp) prefill


def test_handoff_by_hand(rows):
    row = rows["c3-0092"]           # llama-2-7b decode over two R9700s, Vulkan
    # the row's device (from its CSV columns) names no host link: PCIe 4.0 x16 assumed, 31.5 GB/s per direction
    assert row.hw.host_link_gbps in (None, 0, 0.0) and host_link(row.hw).per_direction_bytes_s == 31.5e9
    # one boundary; Vulkan stages it through host memory: two blocking copies of d_model x 4 bytes, each the
    # bytes at the host link's rate plus one peer-copy latency
    one_copy = 4096 * 4.0 / 31.5e9 + SYNC_LATENCY_S["peer-copy"]
    assert handoff_s(row) == pytest.approx(2 * one_copy, rel=1e-6)


@pytest.mark.parametrize("rid", ["c3-0092", "c3-0093", "c3-0264", "r0555"])
def test_the_evaluator_times_a_split_as_predict_does_under_any_profile(rows, rid):
    np = pytest.importorskip("numpy")
    from tokspeed.calibration.fast import build, predict_rows

    row = rows[rid]
    for prof in (get_engine(row.engine, row.hw, version=row.month or row.era or None), prior_profile(row.engine),
                 replace(prior_profile(row.engine), eta_mem={"default": 0.3}, launch_s=2e-5)):
        fast = predict_rows(build([row]), prof)[0]
        assert fast == pytest.approx(predicted_tok_s(row, prof), rel=1e-6), (rid, prof.source[:40])
    assert np.isfinite(fast)


def test_a_split_run_in_turn_has_no_multi_device_term():
    common = dict(quant="Q4_K_M", prompt=512, gen=128, engine="llama.cpp-cuda", gpus=2)
    split = predict("llama-3.1-8b", "rtx-4090", parallel="split", **common)
    tp = predict("llama-3.1-8b", "rtx-4090", parallel="tp", **common)
    assert split.band_in_turn == ("decode", "prefill")
    assert tp.band_in_turn == ()
    one = predict("llama-3.1-8b", "rtx-4090", **{**common, "gpus": 1})
    # the band's width (high / low) on the split is the one device's; TP's is wider by the multi-device term
    width = lambda p: p.decode.tok_s_high / p.decode.tok_s_low              # noqa: E731
    assert width(split) == pytest.approx(width(one), rel=1e-9)
    assert width(tp) > width(one)
    deep = predict("llama-3.1-8b", "rtx-4090", parallel="split", **{**common, "prompt": 4096})
    assert deep.band_in_turn == ("decode",)          # a pipelined prompt keeps its term


@pytest.mark.parametrize("prompt, ubatch, n_batch", [(0, 512, 2048), (512, 512, 2048), (513, 512, 2048),
                                                      (2048, 4096, 2048), (2049, 4096, 2048), (300, 256, 128)])
def test_one_micro_batch_without_walking_the_chunks(prompt, ubatch, n_batch):
    from tokspeed.workload import Workload, one_micro_batch

    w = Workload(prompt=prompt, gen=0, ubatch=ubatch, n_batch=n_batch)
    walked = sum(1 for _ in w.prefill_chunks())
    assert one_micro_batch(prompt, ubatch, n_batch) == (walked <= 1) == (not w.splits_prompt())
    # a hostile row's counts are compared, never walked: 2**31 tokens in micro-batches of one is one comparison
    assert one_micro_batch(1 << 31, 1, 1) is False
