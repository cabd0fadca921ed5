"""bench-server --ray (issue 30): the load from Ray actors on a local two-node cluster, the driver the
only planner and writer. Against the fake server: the load asked is the load sent (count, concurrency),
records have the --workers shape plus actor and node, summary.json names the actors and their clock
offsets, a lost actor ends partial with exit 3 and every finished request kept; without Ray, one line.

One cluster for the module (Ray starts slowly on a busy machine); every wait in the code under test
has a timeout, each run is capped with --max-duration, and a watchdog ends a test that hangs anyway."""

import faulthandler
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokspeed.cli.main import main
from test_serverbench_llamaserver import llama_server  # noqa: F401 (the real llama-server fixture)
from test_serverbench_workers import server  # noqa: F401 (the fake server fixture)
from tokspeed.serverbench.workers import EXIT_AFTER_ENV

pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parent.parent
HANG_S = 300  # no test here may take longer (a two-node start on 2 busy cores takes ~15 s)


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1)
        c.wait_for_nodes(timeout=120)
        yield c
    finally:
        import ray

        ray.shutdown()
        c.shutdown()


def bench(server, out, *extra):
    return main(["bench-server", server.url, "--model", "ok", "-o", str(out), "--quiet", "--json",
                 "--max-tokens", "4", "--max-duration", "120", *extra])


def requests_of(out):
    return [r for r in (json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines())
            if r["type"] == "request"]


def most_at_once(recs) -> int:
    """The most requests in flight at one moment, from the driver's start_s/end_s."""
    events = sorted([(r["start_s"], 1) for r in recs] + [(r["end_s"], -1) for r in recs])
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


@pytest.mark.slow
def test_two_actors_on_two_nodes_send_the_load_asked(cluster, server, tmp_path, capsys):
    out = tmp_path / "ray"
    rc = bench(server, out, "--ray", cluster.address, "--ray-actors", "2", "--concurrency", "8",
               "--requests", "40", "--warmup", "1")
    assert rc == 0, capsys.readouterr().err
    recs = requests_of(out)
    assert len(server.bodies) == len(recs) == 41  # warm-up + 40, each sent once and recorded once
    assert len({r["index"] for r in recs}) == 41
    measured = [r for r in recs if not r["warmup"]]
    assert all(r["ok"] for r in recs) and most_at_once(measured) == 8  # concurrency 8: reached, never passed
    s = json.loads((out / "summary.json").read_text())
    assert s["requests"] == 41 and s["partial"] is False and s["workers"] == {"n": 2, "dead": []}
    actors = s["ray"]["actors"]
    assert [a["actor"] for a in actors] == [0, 1] and s["ray"]["nodes"] == 2
    assert len({a["node_id"] for a in actors}) == 2  # spread: one actor per node
    for a in actors:  # one machine: the clocks agree to well within a second, measured by a real call
        assert abs(a["clock_offset_s"]) < 1.0 and 0 < a["clock_rtt_s"] < 5.0
    assert {r["actor"] for r in measured} == {0, 1}
    node_of = {a["actor"]: a["node"] for a in actors}
    assert all(r["node"] == node_of[r["actor"]] and r["worker"] == r["actor"] for r in recs)
    assert [w["worker"] for w in s["phases"][0]["workers_cpu"]] == [0, 1]
    # the same run from --workers 2: the same record keys, Ray adding only actor and node
    out_w = tmp_path / "workers"
    assert bench(server, out_w, "--workers", "2", "--concurrency", "8", "--requests", "8", "--warmup", "1") == 0
    keys_w = {frozenset(r) for r in requests_of(out_w)}
    keys_r = {frozenset(set(r) - {"actor", "node"}) for r in recs}
    assert keys_r == keys_w  # (a warm-up record has no phase_start_s: two shapes in both)


@pytest.mark.slow
def test_two_actors_against_the_real_llama_server(cluster, llama_server, tmp_path, capsys):
    """(Before the tests that kill actors and nodes of the shared cluster.) The same client on Ray actors against
    llama.cpp's own llama-server (test_serverbench_llamaserver's fixture: a tiny random-weight GGUF, every request
    for N tokens streams N tokens, EOS never comes): every request is recorded once, by the actor that sent it,
    with the token count the server itself reports."""
    out = tmp_path / "ray-llama"
    rc = main(["bench-server", llama_server, "--model", "tiny", "-o", str(out), "--quiet", "--max-duration", "120",
               "--ray", cluster.address, "--ray-actors", "2", "--concurrency", "2", "--requests", "6",
               "--warmup", "0", "--max-tokens", "8", "--prompt-tokens", "8", "--ignore-eos"])
    assert rc == 0, capsys.readouterr().err
    recs = requests_of(out)
    assert len(recs) == 6 and len({r["index"] for r in recs}) == 6 and all(r["ok"] for r in recs)
    assert all(r["output_tokens"] == 8 and r["server_timings"]["output_tokens"] == 8 for r in recs)
    assert {r["actor"] for r in recs} <= {0, 1} and most_at_once(recs) <= 2
    s = json.loads((out / "summary.json").read_text())
    assert s["partial"] is False and [a["actor"] for a in s["ray"]["actors"]] == [0, 1]


@pytest.mark.slow
def test_a_lost_actor_ends_partial_with_every_finished_request_kept(cluster, server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(EXIT_AFTER_ENV, "1:3")  # actor 1's process exits when it is handed its 4th request
    out = tmp_path / "run"
    rc = bench(server, out, "--ray", cluster.address, "--ray-actors", "2", "--concurrency", "4",
               "--requests", "40", "--warmup", "0")
    err = capsys.readouterr().err
    assert rc == 3  # the run did not do what was asked: partial, exit 3
    recs = requests_of(out)
    assert len({r["index"] for r in recs}) == len(recs) < 40
    lost = [r for r in recs if r["error"] == "lost"]
    assert lost and all(r["actor"] == 1 and "actor 1" in r["error_detail"] for r in lost)
    # each of the 4 requests handed to actor 1 is one record: finished (kept) or lost with it. Two
    # had finished before the 3rd and the 4th were handed to it (2 slots of concurrency 4 are its)
    # (a request the stop cancelled before any actor was handed it has a record but no actor: .get)
    ok_1 = sum(1 for r in recs if r.get("actor") == 1 and r["ok"])
    assert ok_1 + len(lost) == 4 and ok_1 >= 2
    # every request the server answered in full is a record (lost and cancelled ones may have reached it too)
    assert sum(r["ok"] for r in recs) <= len(server.bodies) <= len(recs)
    s = json.loads((out / "summary.json").read_text())
    assert s["partial"] is True and s["requests"] == len(recs)
    [dead] = s["workers"]["dead"]
    assert dead["worker"] == 1 and dead["phase"] == "c=4" and "was lost" in dead["error"]
    assert "Ray actor 1 on node" in err and "Traceback" not in err
    last = json.loads((out / "requests.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "end" and last["ray"]["actors"][1]["actor"] == 1
    (out / "summary.json").unlink()  # rebuilt from the JSONL alone: still partial, still the actors
    assert main(["bench-server", "--summarize", str(out), "--json", "--no-report"]) == 3
    again = json.loads((out / "summary.json").read_text())
    assert again["partial"] is True and again["ray"] == s["ray"] and again["workers"] == s["workers"]


@pytest.mark.slow
def test_a_rate_is_kept_by_the_driver_clock(cluster, server, tmp_path):
    """Constant arrivals at 20/s: the driver hands out request k at k / 20 s after the first, whichever
    actor sends it (the fake server answers 4 tokens in ~0.11 s: about 2 in flight, under the cap of 4)."""
    out = tmp_path / "run"
    rc = bench(server, out, "--ray", cluster.address, "--rate", "20", "--arrivals", "constant", "--requests", "10",
               "--max-in-flight", "4", "--warmup", "0")
    recs = sorted(requests_of(out), key=lambda r: r["start_s"])
    assert rc == 0 and len(recs) == len(server.bodies) == 10
    arrivals = [r["start_s"] - r["queued_s"] for r in recs]
    assert abs((arrivals[-1] - arrivals[0]) - 9 / 20) < 0.1
    assert {r["actor"] for r in recs} == {0, 1}  # default: one actor per node


@pytest.mark.slow
def test_ctrl_c_cancels_on_every_actor_and_keeps_what_was_measured(cluster, server, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "tokspeed", "bench-server", server.url, "--model", "slow",
                          "--ray", cluster.address, "--ray-actors", "2", "--concurrency", "4", "--requests", "200",
                          "--warmup", "0", "--max-tokens", "8", "-o", str(out), "--quiet"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                (out / "requests.jsonl").exists() and len((out / "requests.jsonl").read_text().splitlines()) >= 5):
            time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "Error" not in err, err
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    recs = [r for r in lines if r["type"] == "request"]
    assert lines[-1]["type"] == "end" and lines[-1]["interrupted"] is True
    assert sum(r["ok"] for r in recs) >= 4 and len(recs) < 200
    # the requests in flight on both actors at the press: cancelled there, each still one record
    cancelled = [r for r in recs if r["error"] == "cancelled"]
    assert {r["actor"] for r in cancelled} == {0, 1} and all(r["error_detail"] for r in cancelled)
    s = json.loads((out / "summary.json").read_text())
    assert s["partial"] is True and s["requests"] == len(recs) and not s["workers"]["dead"]


def test_without_ray_one_line_names_the_install(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if the extra were not installed
    rc = bench(server, tmp_path / "run", "--ray")
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "pip install 'tokspeed[distributed]'" in err and "ray" in err
    assert not (tmp_path / "run").exists() and not server.bodies
    # the library says it too, in its own words, for a caller that skips the CLI
    from types import SimpleNamespace

    from tokspeed.errors import UserError
    from tokspeed.serverbench.ray_driver import RayLoad

    with pytest.raises(UserError, match=r"needs the ray package.*pip install 'tokspeed\[distributed\]'"):
        RayLoad.start(SimpleNamespace(ray="auto"))


@pytest.mark.parametrize("extra, words", [
    (["--ray", "127.0.0.1:1"], "no Ray cluster answers at 127.0.0.1:1"),
    (["--ray", "no-port-here"], "cannot read the Ray address"),
    (["--ray", "--ray-actors", "0"], "--ray-actors must be from 1"),
    (["--ray-actors", "2"], "--ray-actors needs --ray"),
    (["--ray", "--workers", "2"], "--ray and --workers"),
])
def test_bad_ray_input_is_one_line_and_exit_2(server, tmp_path, capsys, extra, words):
    pytest.importorskip("ray")
    rc = bench(server, tmp_path / "run", *extra)
    err = capsys.readouterr().err
    assert rc == 2 and words in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists() and not server.bodies


@pytest.mark.slow
def test_a_lost_node_is_a_lost_actor(cluster, server, tmp_path, capsys):
    """A third node joins, takes one of three actors (one per node), and is removed mid-run (its raylet
    killed)."""
    import threading

    node = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes(timeout=120)
    out = tmp_path / "run"

    def remove_when_running():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            path = out / "requests.jsonl"
            if path.exists() and len(path.read_text().splitlines()) >= 4:
                break
            time.sleep(0.05)
        cluster.remove_node(node, allow_graceful=False)

    remover = threading.Thread(target=remove_when_running, daemon=True)
    remover.start()
    rc = bench(server, out, "--ray", cluster.address, "--model", "slow", "--concurrency", "6",
               "--requests", "200", "--warmup", "0")
    remover.join(130)
    err = capsys.readouterr().err
    recs = requests_of(out)
    s = json.loads((out / "summary.json").read_text())
    assert rc == 3 and s["partial"] is True and s["ray"]["nodes"] == 3
    [gone] = [a["actor"] for a in s["ray"]["actors"] if a["node_id"] == node.node_id]  # one actor per node
    [dead] = s["workers"]["dead"]
    lost = [r for r in recs if r["error"] == "lost"]
    assert dead["worker"] == gone and lost and {r["actor"] for r in lost} == {gone}
    assert dead["node"] == node.node_id[:12] and "Traceback" not in err
    assert len({r["index"] for r in recs}) == len(recs) < 200

