"""Summary statistics from hand-made records, checked against values worked out by hand."""

import json

import pytest

from tokspeed.serverbench.client import timing_fields
from tokspeed.serverbench.record import Recorder, read_jsonl
from tokspeed.serverbench.summary import percentile, stats, summarize


def test_percentile_interpolates_between_order_statistics():
    xs = [4.0, 1.0, 3.0, 2.0]  # sorted 1,2,3,4; rank = q/100 * 3
    assert percentile(xs, 50) == pytest.approx(2.5)  # rank 1.5
    assert percentile(xs, 90) == pytest.approx(3.7)  # rank 2.7 -> 3 + 0.7
    assert percentile(xs, 99) == pytest.approx(3.97)
    assert percentile([5.0], 99) == 5.0


def test_stats_mean_min_max():
    s = stats([1, 2, 3, 10, None])
    assert s["n"] == 4 and s["mean"] == 4.0 and s["min"] == 1 and s["max"] == 10


def test_timing_fields_expand_multi_token_chunks_into_zero_gaps():
    # chunks at 0.1, 0.3, 0.6 s carrying 1, 3, 2 tokens; 6 tokens in all, stream ends at 0.7 s
    t = timing_fields([0.1, 0.3, 0.6], [1, 3, 2], 6, 0.7)
    assert t["ttft_s"] == 0.1
    assert t["itl_s"] == pytest.approx([0.2, 0.0, 0.0, 0.3, 0.0])  # 5 gaps for 6 tokens
    assert t["decode_s"] == pytest.approx(0.5)
    assert sum(t["itl_s"]) == pytest.approx(t["decode_s"])
    assert t["tpot_s"] == pytest.approx(0.5 / 5)


def test_timing_fields_without_tokens():
    t = timing_fields([], [], None, 1.5)
    assert t["ttft_s"] is None and t["itl_s"] == [] and t["e2e_s"] == 1.5


def rec(i, phase, c, ok=True, err=None, warm=False, start=0.0, end=1.0, out=11, decode=0.5, ttft=0.1):
    return {"type": "request", "index": i, "phase": phase, "concurrency": c, "rate_rps": None, "warmup": warm,
            "ok": ok, "error": err, "start_s": start, "end_s": end, "output_tokens": out if ok else None,
            "decode_s": decode if ok else None, "ttft_s": ttft if ok else None, "itl_s": [decode / (out - 1)] * (out - 1) if ok else [],
            "output_tokens_source": "usage"}


def test_phase_throughput_and_errors_by_kind():
    recs = [rec(0, "warm-up", 1, warm=True, start=0, end=9),  # excluded everywhere but the counts
            rec(1, "c=2", 2, start=1.0, end=2.0, out=11, decode=0.5),
            rec(2, "c=2", 2, start=1.0, end=3.0, out=21, decode=1.0),
            rec(3, "c=2", 2, ok=False, err="http_429", start=2.0, end=2.1),
            rec(4, "c=2", 2, ok=False, err="cancelled", start=3.0, end=3.5)]
    s = summarize({"type": "run", "model": "m"}, recs)
    assert s["failed"] == 1 and s["errors"] == {"http_429": 1} and s["cancelled"] == 1
    (ph,) = s["phases"]
    assert ph["requests"] == 4 and ph["ok"] == 2 and ph["failed"] == 1
    assert ph["wall_s"] == pytest.approx(2.5)  # 1.0 -> 3.5
    assert ph["output_tokens"] == 32
    assert ph["output_tok_s"] == pytest.approx(32 / 2.5)
    # per request decode speed: (11-1)/0.5 = 20 and (21-1)/1.0 = 20
    assert ph["per_user_decode_tok_s"] == pytest.approx(20.0)
    assert ph["stats"]["itl_s"]["n"] == 10 + 20
    assert ph["stats"]["ttft_s"]["p50"] == pytest.approx(0.1)


def test_summary_rebuilds_from_jsonl_and_skips_a_torn_last_line(tmp_path):
    r = Recorder(tmp_path, {"model": "m"})
    for x in (rec(1, "c=1", 1), rec(2, "c=1", 1, ok=False, err="timeout_idle")):
        r.write(x)
    r.close()
    with open(tmp_path / "requests.jsonl", "a") as f:
        f.write('{"type": "request", "index": 3, "ok": tr')  # a crash mid-write
    run, recs, end, bad = read_jsonl(tmp_path)
    assert run["model"] == "m" and [x["index"] for x in recs] == [1, 2] and bad == 1
    assert end is None and read_jsonl(tmp_path).partial  # no end line: the run was killed
    s = summarize(run, recs, skipped_lines=bad)
    assert s["errors"] == {"timeout_idle": 1} and s["unreadable_lines"] == 1
    json.dumps(s, allow_nan=False)


def test_recorder_refuses_to_mix_two_runs(tmp_path):
    from tokspeed.errors import UserError

    Recorder(tmp_path, {}).close()
    with pytest.raises(UserError):
        Recorder(tmp_path, {})
