"""bench-server's predicted overlay from the scheduler simulation (tokspeed.serving.overlay): each load level
replayed with the prompt and output lengths its requests actually had."""

import pytest

from tokspeed.serving.overlay import MIN_REQUESTS, phase_lengths
from tokspeed.serving_api import overlay_phase


def test_phase_lengths_are_the_levels_answered_requests():
    records = [{"phase": "c=1", "ok": True, "prompt_tokens": 100, "output_tokens": 50},
               {"phase": "c=1", "ok": False, "prompt_tokens": 100, "output_tokens": 3},      # failed
               {"phase": "c=2", "ok": True, "prompt_tokens": 300, "output_tokens": 150},     # another level
               {"phase": "c=1", "ok": True, "prompt_tokens": 200, "output_tokens": None},    # no usage
               {"phase": "c=1", "ok": True, "prompt_tokens": 300, "output_tokens": 150}]
    assert phase_lengths(records, "c=1") == [(100, 50), (300, 150)]
    assert phase_lengths(None, "c=1") == []


def test_a_slow_constant_rate_serves_rate_times_mean_output():
    # 0.5 requests/s, lengths alternating (100, 50) and (300, 150): mean output 100 tokens. Each request is over
    # in well under the 2 s between arrivals on an RTX 4090 (8B Q4_K_M, ~7 ms a step), so the server delivers
    # 0.5 x 100 = 50 tok/s; a 64-request run spans 63 gaps + the last request's ~1 s: 6,400 / ~127 s
    sim = overlay_phase("llama-3-8b", "rtx-4090", "Q4_K_M", "llama.cpp", [(100, 50), (300, 150)], rate_rps=0.5)
    assert sim["requests"] == MIN_REQUESTS
    assert sim["output_tok_s"] == pytest.approx(50.0, rel=0.03)
    # a user decodes alone: TPOT is one batch-1 step, far below the 2 s gap
    assert sim["tpot_ms_p50"] < 20


def test_recorded_lengths_change_the_answer():
    # the same mean output (100 tokens) at concurrency 4: long prompts take prefill time from the decode steps
    short = overlay_phase("llama-3-8b", "rtx-4090", "Q4_K_M", "llama.cpp", [(64, 100)], concurrency=4)
    long = overlay_phase("llama-3-8b", "rtx-4090", "Q4_K_M", "llama.cpp", [(4000, 100)], concurrency=4)
    assert long["output_tok_s"] < short["output_tok_s"] and long["ttft_ms_p50"] > short["ttft_ms_p50"]


def test_a_servers_impossible_lengths_are_dropped_and_the_replay_bounded():
    records = [{"phase": "x", "ok": True, "prompt_tokens": p, "output_tokens": o}
               for p, o in ((True, 5), ("100", 5), (100, 1 << 30), (100.5, 5), (-3, 5), (100, 5))]
    assert phase_lengths(records, "x") == [(100, 5)]
    from tokspeed.errors import UserError

    with pytest.raises(UserError, match="beyond the simulation"):
        overlay_phase("llama-3-8b", "rtx-4090", "Q4_K_M", "llama.cpp", [(100, 1 << 20)], concurrency=1)
