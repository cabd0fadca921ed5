"""llama.cpp row split (-sm row) prefill is not modelled (docs/scale.md): predict says so, and the calibration
view counts such rows as not answered instead of scoring a figure known to be 3-35x off."""

from tokspeed.calibration.answered import ROW_SPLIT_DETAIL, why_unanswered
from tokspeed.calibration.rows import load_rows
from tokspeed.predict import predict
from tokspeed.scale.parallel import ROW_SPLIT_PREFILL, row_split_prefill


def test_the_predicate_names_only_llama_cpp_row_split_prefill():
    assert row_split_prefill("llama.cpp-cuda", "tp", 2, "prefill")
    assert not row_split_prefill("llama.cpp-cuda", "tp", 2, "decode")          # decode is modelled (docs/scale.md)
    assert not row_split_prefill("llama.cpp-cuda", "layer-split", 2, "prefill")
    assert not row_split_prefill("llama.cpp-cuda", "tp", 1, "prefill")
    assert not row_split_prefill("vllm", "tp", 2, "prefill")                    # NCCL TP: modelled


def test_predict_warns_on_row_split_prefill_only():
    row = predict("llama-2-7b", "rtx-3090", quant="F16", engine="llama.cpp-cuda", prompt=494, gen=16, gpus=2,
                  parallel="tp")
    assert ROW_SPLIT_PREFILL in row.warnings
    layer = predict("llama-2-7b", "rtx-3090", quant="F16", engine="llama.cpp-cuda", prompt=494, gen=16, gpus=2,
                    parallel="split")
    assert ROW_SPLIT_PREFILL not in layer.warnings


def test_row_split_prefill_rows_are_not_answered_but_their_decode_rows_are():
    # the 2023 XiongjieDai tables: 6x RTX 3090 row split, llama-2-7b F16 prefill 88 tok/s vs 3,169 on one card
    rows = [r for r in load_rows() if r.n_devices > 1 and r.parallel == "tp" and r.engine == "llama.cpp-cuda"]
    pre = [r for r in rows if r.metric == "prefill"]
    dec = [r for r in rows if r.metric == "decode"]
    assert pre and dec
    assert all(why_unanswered(r) == ("parallel", ROW_SPLIT_DETAIL) for r in pre)
    assert all(why_unanswered(r) is None for r in dec[:5])
