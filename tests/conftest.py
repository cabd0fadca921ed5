import subprocess
import sys

import pytest

from tokspeed.hardware.spec import Hardware


def run_cli(*args, input=None, timeout=120):
    """Run `python -m tokspeed ARGS` and return the CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "tokspeed", *map(str, args)], capture_output=True, text=True,
                          input=input, timeout=timeout)


@pytest.fixture
def tb_device():
    """The seeds' idealised device: 1 TB/s, memory large enough for anything."""
    return Hardware(id="one-tb", name="1 TB/s device", kind="gpu", vendor="test", memory_gb=10_000,
                    bandwidth_gbps=1000, fp16_tflops=1000)
