"""Progress a quiet run still shows (loaded by conftest.py): `pytest -q` prints a dot per test, so one slow test
(a server start, a browser, a fit) kept the terminal silent for minutes. Here a test that runs longer than
``TOKSPEED_TEST_HEARTBEAT_S`` seconds (default 30) gets a line saying which test and for how long, every that many
seconds; and what makes a group of tests skip for the whole run (no chromium, no llama.cpp binaries) is said once,
at the start, not as a skip per test at the end."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVERY_S = float(os.environ.get("TOKSPEED_TEST_HEARTBEAT_S", "30"))


def llama_cpp_binary(name: str) -> Path | None:
    """``llama-server`` or ``llama-bench`` built by scripts/build_llama_server.sh for the pinned version
    (scripts/llama_cpp_version.txt), or the path in TOKSPEED_LLAMA_SERVER / TOKSPEED_LLAMA_BENCH."""
    env = os.environ.get(f"TOKSPEED_{name.upper().replace('-', '_')}")
    if env:
        return Path(env)
    version = (ROOT / "scripts" / "llama_cpp_version.txt").read_text().strip()
    cache = Path(os.environ.get("TOKSPEED_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "tokspeed")
    p = cache / f"llama-server-{version}" / name
    return p if p.is_file() else None


def missing_at_start() -> list[str]:
    """One line per group of tests that will skip for want of something installed."""
    out = []
    if not (shutil.which("chromium") or Path("/usr/bin/chromium").exists()):
        out.append("browser tests skip: no chromium (apt-get install chromium)")
    if llama_cpp_binary("llama-server") is None:
        out.append("llama-server tests skip: no build (bash scripts/build_llama_server.sh)")
    try:
        import importlib.util

        if importlib.util.find_spec("llama_cpp") is None:
            out.append("llama-cpp-python tests skip: optional, not installed (extra llamacpp)")
    except (ImportError, ValueError):
        pass
    return out


class Heartbeat:
    """A daemon thread that writes a line while one test runs longer than ``every`` seconds."""

    def __init__(self, write, every: float = EVERY_S):
        self.write, self.every = write, every
        self.current: tuple[str, float] | None = None
        self._lock = threading.Lock()
        threading.Thread(target=self._loop, daemon=True).start()

    def start(self, nodeid: str) -> None:
        with self._lock:
            self.current = (nodeid, time.monotonic())

    def stop(self) -> None:
        with self._lock:
            self.current = None

    def _loop(self) -> None:
        while True:
            time.sleep(self.every)
            with self._lock:
                cur = self.current
            if cur is not None and time.monotonic() - cur[1] >= self.every:
                self.write(f"  ... {cur[0]}: {time.monotonic() - cur[1]:.0f} s, still running")
