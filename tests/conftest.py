import os
import shutil
import subprocess
import sys

import pytest

from tokspeed.hardware.spec import Hardware

# Output 1000 columns wide unless a test says otherwise: the CLI wraps at COLUMNS, the terminal's width, or 80 when
# piped, and a test that reads a table or counts an error's lines is not about wrapping (tests/test_terminal_*.py
# are, and set COLUMNS or remove it themselves). Every subprocess a test starts inherits it.
_RUNNER_WIDTH = shutil.get_terminal_size().columns      # pytest's own lines keep the real width
os.environ.setdefault("COLUMNS", "1000")

try:
    from hypothesis import HealthCheck, settings
except ImportError:          # the [test] extra is not installed: the property tests skip themselves
    settings = None

# Hypothesis profiles. "ci" (the default, and what .ci/run uses): the same draws on every machine and every
# run (derandomize; no example database), no per-example deadline (a loaded 2-core runner is slow, not
# wrong), and the failing input printed as a reproducible blob. "fuzz": a longer randomized search for new
# bugs, run by hand (docs/limits.md):  TOKSPEED_HYPOTHESIS=fuzz python -m pytest tests/test_files_fuzz.py
# Any input it finds is added to the test as an explicit @example, so CI replays it forever.
if settings is not None:
    settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("fuzz", derandomize=False, deadline=None, max_examples=5000, print_blob=True,
                              suppress_health_check=list(HealthCheck))
    settings.load_profile(os.environ.get("TOKSPEED_HYPOTHESIS", "ci"))


def run_cli(*args, input=None, timeout=120):
    """Run `python -m tokspeed ARGS` and return the CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "tokspeed", *map(str, args)], capture_output=True, text=True,
                          input=input, timeout=timeout)


@pytest.fixture
def tb_device():
    """The seeds' idealised device: 1 TB/s, memory large enough for anything."""
    return Hardware(id="one-tb", name="1 TB/s device", kind="gpu", vendor="test", memory_gb=10_000,
                    bandwidth_gbps=1000, fp16_tflops=1000)


# -- progress a quiet run still shows (tests/progress.py) ----------------------------------------------------
_heartbeat = None


def pytest_sessionstart(session):
    global _heartbeat
    from progress import Heartbeat, missing_at_start

    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        return
    tr._tw.fullwidth = tr._screen_width = _RUNNER_WIDTH
    for line in missing_at_start():
        tr.write_line(line)
    if not session.config.option.collectonly:
        # the terminal as it was before pytest captured fd 1 (a running test's output is captured, this is not)
        capman = session.config.pluginmanager.getplugin("capturemanager")
        fd = getattr(getattr(getattr(capman, "_global_capturing", None), "out", None), "targetfd_save", None)
        out = os.fdopen(os.dup(fd), "w", buffering=1) if isinstance(fd, int) else sys.__stdout__
        _heartbeat = Heartbeat(lambda line: out.write("\n" + line + "\n"))


def pytest_runtest_logstart(nodeid, location):
    if _heartbeat is not None:
        _heartbeat.start(nodeid)


def pytest_runtest_logfinish(nodeid, location):
    if _heartbeat is not None:
        _heartbeat.stop()
