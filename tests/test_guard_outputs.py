"""The output guard (tokspeed.guard.outputs): every file tokspeed writes goes through one function that never
follows a planted link, and every output target is checked before the work that produces it."""

import json
import os
import time

import pytest

from conftest import run_cli
from tokspeed.errors import UserError
from tokspeed.guard.names import catalog_ref, remote_name
from tokspeed.guard.outputs import check_output, check_output_dir, check_outputs, open_append, write_file
from tokspeed.serverbench.record import RUN_FILES, Recorder, write_csv, write_summary
from tokspeed.serverbench.report_html import write_report


def test_write_file_writes_and_replaces_atomically(tmp_path):
    p = tmp_path / "new" / "deeper" / "out.json"
    write_file(p, "one")
    write_file(p, b"two")
    assert p.read_text() == "two"
    assert sorted(os.listdir(p.parent)) == ["out.json"]            # no temp file left behind


def test_a_link_as_the_target_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out.json").symlink_to(victim)
    with pytest.raises(UserError, match="symbolic link"):
        write_file(tmp_path / "out.json", "overwrite")
    assert victim.read_text() == "precious"


def test_planted_tmp_links_in_a_run_directory_are_never_written_through(tmp_path):
    """bench-server -o DIR once wrote DIR/summary.json.tmp etc. through links planted there."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    for name in ("summary.json.tmp", "requests.csv.tmp", "report.html.tmp", "requests.jsonl.tmp"):
        (run / name).symlink_to(victim)
    rec = {"type": "request", "index": 0, "ok": True, "error_detail": None, "itl_s": [0.01]}
    summary = {"run": {"model": "m", "url": "http://x"}, "phases": [], "ok": 1, "failed": 0}
    write_summary(run, summary)
    write_csv(run, [rec])
    write_report(run, summary, [rec])
    assert victim.read_text() == "precious"
    assert json.loads((run / "summary.json").read_text())["ok"] == 1


def test_check_output_refuses_what_cannot_be_written(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad, words in [(fifo, "not a regular file"), (tmp_path, "is a folder"), ("/proc/tokspeed-out.json", "not writable"),
                       (tmp_path / "f" / "x.json", None), ("", "not a file name")]:
        if words is None:
            (tmp_path / "f").write_text("a file")
            words = "is a file, not a folder"
        with pytest.raises(UserError, match=words):
            check_output(bad)


def test_check_output_dir_and_run_files(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        check_output_dir(tmp_path / "afile")
    with pytest.raises(UserError, match="not writable"):
        check_output_dir("/proc/tokspeed-run")
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.html").symlink_to(tmp_path / "afile")
    with pytest.raises(UserError, match="report.html .*symbolic link"):
        check_outputs(run, RUN_FILES)
    assert check_output_dir(tmp_path / "not" / "yet") == tmp_path / "not" / "yet"


def test_the_recorder_never_appends_through_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("")                       # empty: the "run already there" check does not catch it
    run = tmp_path / "run"
    run.mkdir()
    (run / "requests.jsonl").symlink_to(victim)
    with pytest.raises(UserError, match="symbolic link"):
        Recorder(run, {"url": "http://x"})
    with pytest.raises(UserError, match="symbolic link"):
        open_append(run / "requests.jsonl")
    (run / "requests.jsonl").unlink()
    os.link(victim, run / "requests.jsonl")             # a hard link: no link to refuse by name
    with pytest.raises(UserError, match="hard link"):
        Recorder(run, {"url": "http://x"})
    assert victim.read_text() == ""


@pytest.mark.parametrize("name", ["/etc/passwd.safetensors", "../x.safetensors", "a/b.safetensors", "a\\b.safetensors",
                                  "C:x.safetensors", "..", "", "a\x00b", "x" * 300])
def test_remote_names_are_names_not_paths(name):
    with pytest.raises(UserError, match="shard"):
        remote_name(name, "shard")


def test_remote_name_takes_a_plain_name():
    assert remote_name("model-00001-of-00002.safetensors", "shard") == "model-00001-of-00002.safetensors"


@pytest.mark.parametrize("ref", ["/etc/passwd", "local", "LOCAL", "../x", "x.toml", "~/.ssh/id", "C:x", ".hidden", " ",
                                 "hw\\x", "a\nb"])
def test_catalog_refs_never_name_a_file(ref):
    with pytest.raises(UserError, match="catalog id"):
        catalog_ref(ref, "hardware")


def test_measure_and_probe_refuse_an_unwritable_output_before_any_work(tmp_path):
    t = time.perf_counter()
    for argv in (["probe", "-o", "/proc/tokspeed/profile.toml"],
                 ["measure", "llama-3-8b", "--hardware", "rtx-4090", "-o", "/proc/run.json"],
                 ["report", "llama-3-8b", "--hardware", "rtx-4090", "-o", "/proc/r.html"],
                 ["bench-server", "http://127.0.0.1:9", "--model", "m", "-o", "/proc/tokspeed-run"]):
        p = run_cli(*argv, timeout=60)
        assert p.returncode == 2, p.stderr
        assert "not writable" in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert time.perf_counter() - t < 60
