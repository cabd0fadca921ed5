"""Load profiles against the fake server (issue 15): rate lists, constant and Poisson arrivals, the
throughput phase, a sweep to saturation (by throughput and by SLO), SLO shares and goodput worked
out by hand, warm-up/cool-down windows and the stop conditions."""

import json

import pytest

from serverbench_fake import FakeServer
from tokspeed.cli.main import main
from tokspeed.serverbench.summary import phase_summary, saturation

pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def bench(server, tmp_path, *extra, model="ok", name="run"):
    out = tmp_path / name
    rc = main(["bench-server", server.url, "--model", model, "-o", str(out), "--quiet", "--json", "--warmup", "0",
               *extra])
    return rc, out


def records(out):
    return [r for r in map(json.loads, (out / "requests.jsonl").read_text().splitlines()) if r["type"] == "request"]


def summary_of(out):
    return json.loads((out / "summary.json").read_text())


def test_rate_list_runs_one_phase_per_rate(server, tmp_path):
    rc, out = bench(server, tmp_path, "--rate", "20,40", "--requests", "4")
    assert rc == 0
    s = summary_of(out)
    assert [(p["phase"], p["rate_rps"], p["load_kind"]) for p in s["phases"]] == [
        ("rate=20", 20.0, "rate_rps"), ("rate=40", 40.0, "rate_rps")]
    assert all(p["requests"] == 4 for p in s["phases"])


def test_constant_arrivals_are_evenly_spaced(server, tmp_path):
    rc, out = bench(server, tmp_path, "--rate", "10", "--arrivals", "constant", "--requests", "4")
    starts = sorted(r["start_s"] - r["queued_s"] for r in records(out))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert rc == 0 and all(g == pytest.approx(0.1, abs=0.05) for g in gaps)  # 1/10 s apart (send jitter aside)


def test_poisson_arrivals_follow_the_seeded_exponential_gaps(server, tmp_path):
    """The arrival times are the seeded draws: regenerate them with the same RNG sequence."""
    import random

    from tokspeed.serverbench.workload import make_prompt

    rc, out = bench(server, tmp_path, "--rate", "50", "--requests", "5", "--seed", "3")
    assert rc == 0
    rng = random.Random(3)
    make_prompt(0, 128, rng)  # the first request goes at once; its prompt's words come from the same RNG
    expected, t = [0.0], 0.0
    for i in range(1, 5):  # then: the exponential gap, the next prompt (fixed lengths draw nothing)
        t += rng.expovariate(50)
        expected.append(t)
        make_prompt(i, 128, rng)
    arrivals = sorted(r["start_s"] - r["queued_s"] for r in records(out))
    assert [a - arrivals[0] for a in arrivals] == pytest.approx(expected, abs=0.03)


def test_throughput_phase_sends_max_in_flight_back_to_back(server, tmp_path):
    rc, out = bench(server, tmp_path, "--concurrency", "1", "--throughput", "--max-in-flight", "6", "--requests", "6")
    s = summary_of(out)
    assert rc == 0 and [(p["phase"], p["concurrency"]) for p in s["phases"]] == [("c=1", 1), ("throughput", 6)]


def test_sweep_finds_where_throughput_stops_rising(server, tmp_path):
    """The fake 'slots' server serves 2 requests at a time: c=2 nearly doubles c=1 (x2 ideally), c=4 adds
    only the client's own gaps between requests that c=2 leaves idle (a few %): 25 % tolerance separates them."""
    rc, out = bench(server, tmp_path, "--sweep", "--sweep-tolerance", "25", "--requests", "8", model="slots")
    s = summary_of(out)
    assert rc == 0
    assert [p["concurrency"] for p in s["phases"]] == [1, 2, 4]  # stopped after the flat level, not at 256
    assert s["saturation"]["concurrency"] == 2 and s["saturation"]["limit"] == "throughput"
    assert s["saturation"]["output_tok_s"] == pytest.approx(s["phases"][1]["output_tok_s"])


def test_sweep_stops_where_an_slo_breaks(server, tmp_path):
    """With 2 slots, at c=4 half the requests wait a whole request (>= 0.4 s) before their first token,
    while at c=2 the first token takes 0.05 s plus the client's overhead."""
    rc, out = bench(server, tmp_path, "--sweep", "--sweep-tolerance", "1", "--requests", "8", "--slo-ttft-ms", "300",
                    "--slo-percentile", "90", model="slots")
    s = summary_of(out)
    assert [p["concurrency"] for p in s["phases"]] == [1, 2, 4]
    assert s["phases"][1]["slo"]["met"] and not s["phases"][2]["slo"]["met"]
    assert s["saturation"] == {"concurrency": 2, "phase": "c=2", "output_tok_s": s["phases"][1]["output_tok_s"],
                               "goodput_rps": s["phases"][1]["goodput_rps"], "limit": "ttft_s p90"}


def rec(i, ok=True, ttft=0.1, tpot=0.01, e2e=1.0, start=0.0, end=1.0):
    return {"type": "request", "index": i, "phase": "c=4", "concurrency": 4, "rate_rps": None, "ok": ok,
            "error": None if ok else "http_5xx", "ttft_s": ttft if ok else None, "tpot_s": tpot if ok else None,
            "e2e_s": e2e if ok else None, "start_s": start, "end_s": end, "output_tokens": 11 if ok else None,
            "decode_s": 0.1 if ok else None}


def test_slo_shares_and_goodput_by_hand():
    recs = [rec(0, ttft=0.1, start=0, end=1), rec(1, ttft=0.3, start=0, end=2), rec(2, tpot=0.05, start=1, end=3),
            rec(3, ok=False, start=2, end=2.5), rec(4, ttft=0.2, start=2, end=4)]
    ph = phase_summary(recs, {"ttft_s": 0.25, "tpot_s": 0.02, "percentile": 50})
    slo = ph["slo"]
    # TTFT <= 0.25: requests 0, 2, 4 of the 5 (the failed one meets nothing)
    assert slo["ttft_s"]["share"] == pytest.approx(3 / 5)
    # p50 of TTFT with the failure as +inf: sorted 0.1, 0.1, 0.2, 0.3, inf -> 0.2 <= 0.25: met
    assert slo["ttft_s"]["at_percentile"] == pytest.approx(0.2) and slo["ttft_s"]["met"]
    assert slo["tpot_s"]["share"] == pytest.approx(3 / 5)  # 0, 1, 4
    assert slo["share_all"] == pytest.approx(2 / 5)  # 0 and 4 meet both
    # goodput: 2 requests meeting all / wall 0 -> 4 s
    assert ph["goodput_rps"] == pytest.approx(2 / 4)
    assert phase_summary(recs, {"ttft_s": 0.25, "percentile": 90})["slo"]["met"] is False  # p90 hits the failure


def test_saturation_rule_by_hand():
    def ph(c, tok_s, met=True):
        return {"phase": f"c={c}", "load": c, "load_kind": "concurrency", "output_tok_s": tok_s, "goodput_rps": 1.0,
                "slo": {"percentile": 90, "ttft_s": {"met": met}, "met": met}}

    assert saturation([ph(1, 100), ph(2, 190), ph(4, 196)], 0.05) == (
        {"concurrency": 2, "phase": "c=2", "output_tok_s": 190, "goodput_rps": 1.0, "limit": "throughput"}, True)
    point, stop = saturation([ph(1, 100), ph(2, 190), ph(4, 300)], 0.05)
    assert not stop and point["concurrency"] == 4 and point["limit"] == "max_load"
    point, stop = saturation([ph(1, 100), ph(2, 190, met=False)], 0.05)
    assert stop and point["concurrency"] == 1 and point["limit"] == "ttft_s p90"


def test_warmup_and_cooldown_windows_leave_requests_out(server, tmp_path):
    rc, out = bench(server, tmp_path, "--requests", "6", "--cooldown", "2")
    ph = summary_of(out)["phases"][0]
    assert ph["requests"] == 6 and ph["excluded"] == 2 and ph["ok"] == 4 and ph["stats"]["ttft_s"]["n"] == 4
    recs = [dict(rec(i, start=i * 1.0, end=i * 1.0 + 0.5)) for i in range(6)]  # starts 0..5, ends 0.5..5.5
    ph = phase_summary(recs, window={"warmup_s": 2.0, "cooldown_s": 1.0})
    # warm-up: starts before 0 + 2 s (0, 1) out; cool-down: ends after 5.5 - 1 = 4.5 (request 5) out
    assert ph["excluded"] == 3 and ph["ok"] == 3


def test_max_error_rate_aborts_with_exit_3(server, tmp_path):
    rc, out = bench(server, tmp_path, "--requests", "40", "--max-error-rate", "0.3", model="mix:ok,http429")
    s = summary_of(out)
    assert rc == 3 and "above --max-error-rate 30%" in s["aborted"]
    assert 10 <= s["requests"] <= 12  # judged from the 10th request on (+ what was in flight)


def test_max_requests_and_max_duration_end_the_run_normally(server, tmp_path):
    rc, out = bench(server, tmp_path, "--concurrency", "1,2", "--requests", "10", "--max-requests", "5", name="a")
    s = summary_of(out)
    assert rc == 0 and s["aborted"] is None and s["requests"] == 5 and not s["partial"]
    assert all(r["ok"] for r in records(out))  # a cap lets requests in flight finish
    rc, out = bench(server, tmp_path, "--requests", "1000", "--max-duration", "0.6", name="b")
    s = summary_of(out)
    assert rc == 0 and s["aborted"] is None and 1 <= s["requests"] <= 6


@pytest.mark.parametrize("argv, text", [
    (["--rate", "1,x"], "cannot read --rate"),
    (["--rate", "0"], "--rate must be positive"),
    (["--rate", "nan"], "--rate must be a finite"),
    (["--slo-ttft-ms", "-5"], "--slo-ttft-ms must be positive"),
    (["--slo-percentile", "120", "--slo-ttft-ms", "5"], "at most 100"),
    (["--max-error-rate", "1.5"], "--max-error-rate"),
    (["--prompts", "/nonexistent.jsonl"], "no such prompt file"),
    (["--shared-prefix", "0"], "--shared-prefix must be positive"),
])
def test_load_option_errors_are_one_line(argv, text, capsys, tmp_path):
    assert main(["bench-server", "http://127.0.0.1:1", "--model", "m", "-o", str(tmp_path / "r"), *argv]) == 2
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1 and not (tmp_path / "r").exists()


def test_client_cpu_is_recorded_per_phase_and_a_saturated_core_is_said():
    from tokspeed.serverbench.bench import console_notes

    notes = console_notes({"ok": 3, "prompt_tokens_verified": "server",
                           "phases": [{"phase": "c=1", "client_cpu_share": 0.2}, {"phase": "c=64", "client_cpu_share": 0.97}]})
    assert len(notes) == 1 and notes[0].startswith("c=64: the client used 97% of a CPU core")


def test_client_cpu_share_is_cpu_time_over_wall_time(server, tmp_path):
    rc, out = bench(server, tmp_path, "--concurrency", "1,2", "--requests", "4")
    for ph in summary_of(out)["phases"]:
        # the fake server sleeps; the client mostly waits: far below one core, and never negative
        assert 0 <= ph["client_cpu_s"] and 0 <= ph["client_cpu_share"] < 0.9


def test_slo_percentile_landing_exactly_on_a_success_next_to_a_failure():
    """11 requests, p90 -> rank 9.0 exactly: the 10th value (a success) is the percentile, even though
    the 11th is a failure (with +inf for failures this interpolation gave NaN: inf x 0)."""
    recs = [rec(i, ttft=0.01 * (i + 1), start=0, end=1) for i in range(10)] + [rec(10, ok=False, start=0, end=1)]
    slo = phase_summary(recs, {"ttft_s": 0.2, "percentile": 90})["slo"]["ttft_s"]
    assert slo["at_percentile"] == pytest.approx(0.10) and slo["met"]
