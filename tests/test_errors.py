import subprocess
import sys


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "tokspeed", *args], capture_output=True, text=True)


def test_unknown_command_is_one_line_exit_2():
    r = run_cli("no-such-verb")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr
