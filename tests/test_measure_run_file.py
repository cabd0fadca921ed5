"""RUN.json: versioned, round-trips, bad files are one-line user errors; compare-runs matches points."""

import json

import pytest

from tests.conftest import run_cli
from tokspeed.cli.compare_runs import compare
from tokspeed.errors import UserError
from tokspeed.measure.run_file import SCHEMA, SCHEMA_VERSION, new_run, read_run, write_run


def _point(batch, context, tok_s, mbu=0.5):
    return {"batch": batch, "context": context, "decode_tok_s": tok_s, "prefill_tok_s": 100.0, "mbu": mbu}


def _run(points, model="m"):
    return new_run(model={"id": model, "source": "random", "path": "", "n_params": 1}, backend="torch",
                   device="cpu", quant="F32", hardware={"id": "local"}, points=points)


def test_round_trip(tmp_path):
    run = _run([_point(1, 0, 12.5), _point(1, 512, 11.0)])
    run["machine"] = {"cpu_model": "서울 CPU"}      # non-ASCII survives
    p = write_run(run, tmp_path / "a" / "RUN.json")
    back = read_run(p)
    assert back == json.loads(json.dumps(run))
    assert back["schema"] == SCHEMA and back["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("content,msg", [
    ("{", "not valid JSON"), ('{"points": []}', "not a tokspeed run file"),
    (json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION + 1, "points": []}), "newer"),
    (json.dumps({"schema": SCHEMA, "schema_version": 1}), "no points"),
])
def test_bad_run_files(tmp_path, content, msg):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(UserError, match=msg):
        read_run(p)


def test_compare_matches_points_and_speedups():
    a = _run([_point(1, 0, 10.0), _point(1, 512, 8.0), _point(4, 0, 30.0)])
    b = _run([_point(1, 512, 12.0), _point(1, 0, 15.0)])
    rows = compare([a, b])
    assert [(r["batch"], r["context"]) for r in rows] == [(1, 0), (1, 512), (4, 0)]
    assert rows[0]["runs"][1]["speedup"] == pytest.approx(1.5)     # 15 / 10
    assert rows[1]["runs"][1]["speedup"] == pytest.approx(1.5)     # 12 / 8
    assert rows[2]["runs"][1] is None                              # B has no batch-4 point


def test_compare_runs_cli(tmp_path):
    a = write_run(_run([_point(1, 0, 10.0)]), tmp_path / "a.json")
    b = write_run(_run([_point(1, 0, 20.0)]), tmp_path / "b.json")
    r = run_cli("compare-runs", a, b, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["points"][0]["runs"][1]["speedup"] == pytest.approx(2.0)
    r = run_cli("compare-runs", a, b)
    assert r.returncode == 0 and "×2.00" in r.stdout
    r = run_cli("compare-runs", a, tmp_path / "missing.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
