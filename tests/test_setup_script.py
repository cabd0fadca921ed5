"""scripts/test.sh talks during long builds (scripts/ticker.sh) and the README states the first-run time."""

import re
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: str, **env):
    t = time.monotonic()
    r = subprocess.run(["bash", "-c", f"source scripts/ticker.sh; {cmd}"], cwd=ROOT, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", **env}, timeout=30)
    return r, time.monotonic() - t


def test_a_long_command_gets_an_elapsed_line_every_tick():
    r, took = _run('with_ticker "demo build" sleep 3.5', TICK_S="1")
    ticks = re.findall(r"demo build: (\d+) s elapsed", r.stderr)
    # 3.5 s at one line a second: three lines (1, 2, 3 s), then the closing line
    assert len(ticks) >= 2 and [int(t) for t in ticks] == sorted(int(t) for t in ticks)
    assert "demo build: done in" in r.stderr and r.returncode == 0
    assert took < 10


def test_the_commands_status_and_output_are_kept(tmp_path):
    r, _ = _run('with_ticker x sh -c "echo out; exit 3"; echo "rc=$?"', TICK_S="5")
    assert "out" in r.stdout and "rc=3" in r.stdout
    log = tmp_path / "log"
    r, _ = _run(f'TICK_LOG={log} with_ticker x sh -c "echo to-log"', TICK_S="5")
    assert log.read_text() == "to-log\n" and "to-log" not in r.stdout


def test_test_sh_wraps_both_builds_and_readme_states_the_first_run_time():
    sh = (ROOT / "scripts" / "test.sh").read_text()
    assert re.search(r"with_ticker [^\n]*\\\n\s*python3 -m pip install", sh)
    assert 'with_ticker "llama-server build" bash scripts/build_llama_server.sh' in sh
    assert "with_ticker" in (ROOT / "scripts" / "build_llama_server.sh").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "one llama.cpp build" in readme and "about 30 minutes" not in readme


def test_the_suite_builds_llama_cpp_once():
    """llama-cpp-python would compile the same llama.cpp sources a second time: test.sh installs no `llamacpp`
    extra, and the one cmake build takes its version from one place, not from an installed package."""
    sh = (ROOT / "scripts" / "test.sh").read_text()
    installs = re.findall(r"pip install [^\n]*'\.\[([^\]]*)\]'", sh)
    assert installs and all("llamacpp" not in extras.split(",") for extras in installs)
    build = (ROOT / "scripts" / "build_llama_server.sh").read_text()
    assert "llama_cpp_version.txt" in build and "importlib.metadata" not in build
    version = (ROOT / "scripts" / "llama_cpp_version.txt").read_text().strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)


def test_the_venv_the_readme_advises_is_ignored():
    lines = (ROOT / ".gitignore").read_text().split()
    assert ".venv/" in lines
