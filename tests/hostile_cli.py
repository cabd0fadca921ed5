"""Run the CLI as a hostile input would meet it: a subprocess with a time limit, its peak RSS measured, and
the checks every hostile case shares (one line, exit 2/3, no traceback, no raw control character)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_RSS_MB = 400
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# the child's own peak at exit: VmHWM of its address space. getrusage's ru_maxrss keeps the forked test process's
# high-water mark from before exec (hundreds of MB late in a full run; tests/test_guard_bounded.py says the same)
_WRAP = ("import atexit, sys\n"
         "def peak():\n"
         "    with open('/proc/self/status') as f, open(sys.argv[1], 'w') as o:\n"
         "        o.write(next(x for x in f if x.startswith('VmHWM:')).split()[1])\n"
         "atexit.register(peak)\n"
         "from tokspeed.cli.main import main\n"
         "sys.exit(main(sys.argv[2:]))\n")


def cli(args, env_extra=None, timeout=60, stdin=None):
    """(CompletedProcess, peak RSS in MB, seconds) of ``tokspeed ARGS``."""
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env_extra or {})}
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _WRAP, rss.name, *map(str, args)], env=env, capture_output=True,
                           text=True, timeout=timeout, input=stdin)
        took = time.perf_counter() - t0
        kb = rss.read().strip()
    return r, (int(kb) / 1024 if kb else 0.0), took


def assert_hostile_ok(r, rss_mb: float, codes=(2,), words=()):
    """One line on stderr naming the problem, an expected exit code, no traceback, nothing raw on the terminal,
    memory within MAX_RSS_MB."""
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in codes, (r.returncode, r.stderr[-2000:])
    # one message: the error line, and the lines it wraps onto at the console width (indented continuations)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln[0].isspace()]
    if r.returncode == 2:
        assert len(lines) == 1 and "error:" in lines[0], r.stderr[-2000:]
        for w in words:
            assert w.lower() in lines[0].lower(), (w, lines[0])
    assert not RAW_CONTROL.search(r.stdout + r.stderr), repr((r.stdout + r.stderr)[:500])
    assert rss_mb <= MAX_RSS_MB, rss_mb
