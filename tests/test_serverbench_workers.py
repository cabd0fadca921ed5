"""bench-server --workers N (issue 15 item 5): the load from N spawned processes, the parent the only
writer. Against the fake server: every request sent is one record, once; the summary's counts are the
records; a worker that dies mid-run leaves a valid, partial summary with what it sent; bad values exit 2."""

import json

import pytest

from serverbench_fake import FakeServer
from tokspeed.cli.main import main
from tokspeed.serverbench.loadgen import LoadPlan
from tokspeed.serverbench.workers import EXIT_AFTER_ENV
from tokspeed.serverbench.workload import parse_dist

pytest.importorskip("httpx")


@pytest.fixture()
def server():
    with FakeServer() as s:
        yield s


def bench(server, out, *extra):
    return main(["bench-server", server.url, "--model", "ok", "-o", str(out), "--quiet", "--json",
                 "--max-tokens", "4", *extra])


def lines(out):
    return [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]


def test_two_workers_send_each_request_once_and_the_parent_records_all(server, tmp_path, capsys):
    out = tmp_path / "run"
    rc = bench(server, out, "--workers", "2", "--concurrency", "2,4", "--requests", "6", "--warmup", "1")
    assert rc == 0
    recs = [r for r in lines(out) if r["type"] == "request"]
    sent = len(server.bodies)
    assert sent == 1 + 6 + 6  # warm-up + two phases of 6, split 3/3 over the workers
    assert len(recs) == sent
    assert len({r["index"] for r in recs}) == sent  # each request once (interleaved numbers: w, w+2, ...)
    assert {r["worker"] for r in recs if not r["warmup"]} == {0, 1}
    assert [r["worker"] for r in recs if r["warmup"]] == [0]
    s = json.loads((out / "summary.json").read_text())
    assert s["requests"] == len(recs) and s["partial"] is False
    for ph in s["phases"]:
        assert ph["requests"] == sum(1 for r in recs if r["phase"] == ph["phase"] and not r["warmup"]) == 6
        assert [w["worker"] for w in ph["workers_cpu"]] == [0, 1]
        assert ph["client_cpu_share"] >= max(w["cpu_share"] for w in ph["workers_cpu"])
    assert s["workers"] == {"n": 2, "dead": []}
    # one time line for both processes: the second phase starts after every request of the first ended
    first, second = ([r for r in recs if r["phase"] == ph] for ph in ("c=2", "c=4"))
    assert max(r["end_s"] for r in first) <= min(r["start_s"] for r in second)
    assert all(0 <= r["start_s"] <= r["end_s"] for r in recs)


def test_a_dead_worker_leaves_a_valid_partial_summary(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(EXIT_AFTER_ENV, "1:2")  # worker 1 exits (code 1) after its 2nd record
    out = tmp_path / "run"
    rc = bench(server, out, "--workers", "2", "--concurrency", "4", "--requests", "40", "--warmup", "0")
    assert rc == 3  # no request failed, but the run did not do what was asked: partial, exit 3
    recs = [r for r in lines(out) if r["type"] == "request"]
    assert sum(1 for r in recs if r["worker"] == 1) == 2
    assert len(recs) < 40 and len({r["index"] for r in recs}) == len(recs)
    s = json.loads((out / "summary.json").read_text())
    assert s["partial"] is True and s["requests"] == len(recs)
    assert s["workers"]["dead"] == [{"worker": 1, "exitcode": 1, "phase": "c=4", "error": None}]
    assert sum(p["requests"] for p in s["phases"]) == len(recs)
    assert lines(out)[-1]["type"] == "end"
    assert "worker 1 died during c=4" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["0", "nan", "1e400", "2.5", "-1", "65"])
def test_bad_worker_counts_exit_2(server, tmp_path, capsys, bad):
    rc = bench(server, tmp_path / "run", "--workers", bad)
    err = capsys.readouterr().err
    assert rc == 2 and "--workers" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_shares_of_a_level_add_up_to_the_level():
    dist = parse_dist("8", "--max-tokens", 100)[0]
    for n in (1, 2, 3, 5):
        plans = [LoadPlan([3], 7, None, None, 2, dist, dist, worker=w, n_workers=n) for w in range(n)]
        assert sum(p.share(3) for p in plans) == 3  # slots
        # requests go to the workers that have a slot: 7 over min(n, 3) of them
        assert [p.share(7, 3) for p in plans] == {1: [7], 2: [4, 3], 3: [3, 2, 2], 5: [3, 2, 2, 0, 0]}[n]
        assert sum(p.share(2, 1) for p in plans) == 2 and plans[0].share(2, 1) == 2  # warm-up: worker 0


def test_a_rate_phase_is_split_over_the_workers(server, tmp_path):
    out = tmp_path / "run"
    rc = bench(server, out, "--workers", "2", "--rate", "40", "--requests", "5", "--max-in-flight", "4",
               "--warmup", "0", "--arrivals", "constant")
    recs = [r for r in lines(out) if r["type"] == "request"]
    assert rc == 0 and len(recs) == len(server.bodies) == 5
    assert sorted(r["worker"] for r in recs) == [0, 0, 0, 1, 1]  # 5 requests over 2 workers of 2 slots each
    s = json.loads((out / "summary.json").read_text())
    assert s["phases"][0]["requests"] == 5 and s["phases"][0]["rate_rps"] == 40.0


def test_a_sweep_stops_all_workers_at_the_level_that_breaks_the_slo(server, tmp_path):
    """The fake server's first token comes after 50 ms: a 1 ms TTFT SLO breaks at the first level, so
    no worker starts the second one (and c=1 gives worker 1 no slot: it sends nothing)."""
    out = tmp_path / "run"
    rc = bench(server, out, "--workers", "2", "--sweep", "--concurrency", "1,2,4", "--requests", "3",
               "--warmup", "0", "--slo-ttft-ms", "1")
    recs = [r for r in lines(out) if r["type"] == "request"]
    s = json.loads((out / "summary.json").read_text())
    assert rc == 0 and [p["phase"] for p in s["phases"]] == ["c=1"]
    assert len(recs) == len(server.bodies) == 3 and {r["worker"] for r in recs} == {0}


def test_summarize_keeps_the_dead_worker(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(EXIT_AFTER_ENV, "0:1")
    out = tmp_path / "run"
    assert bench(server, out, "--workers", "2", "--concurrency", "2", "--requests", "20", "--warmup", "0") == 3
    (out / "summary.json").unlink()
    assert main(["bench-server", "--summarize", str(out), "--json", "--no-report"]) == 3
    s = json.loads((out / "summary.json").read_text())
    assert s["partial"] is True and [d["worker"] for d in s["workers"]["dead"]] == [0]


def test_the_cpu_warning_names_the_busiest_process():
    from tokspeed.serverbench.bench import console_notes

    phase = {"phase": "c=8", "client_cpu_share": 0.95, "workers_cpu": [{"worker": 0, "cpu_s": 1.9, "cpu_share": 0.95},
                                                                     {"worker": 1, "cpu_s": 0.8, "cpu_share": 0.4}]}
    notes = console_notes({"phases": [phase, {"phase": "c=4", "client_cpu_share": 0.89, "workers_cpu": []}]})
    assert notes == ["c=8: the busiest client process used 95% of a CPU core: it may be the bottleneck (run the "
                     "load from more processes, --workers N, or machines)"]
