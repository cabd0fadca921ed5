"""--plot FILE on predict, sweep, compare and explain writes the chart."""

import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")


@pytest.mark.parametrize("args", [
    ["predict", "llama-3-8b", "--hardware", "rtx-4090", "--plot", "{d}/p.png"],
    ["sweep", "llama-3-8b", "--hardware", "rtx-4090", "--context", "1K,32K", "--plot", "{d}/s.svg"],
    ["compare", "llama-3-8b", "--hardware", "rtx-4090,h100-sxm", "--plot", "{d}/c.png"],
    ["explain", "llama-3-8b", "--hardware", "rtx-4090", "--plot", "{d}/e.svg"],
])
def test_plot_flag_writes_file(tmp_path, args):
    args = [a.format(d=tmp_path) for a in args]
    r = subprocess.run([sys.executable, "-m", "tokspeed", *args, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / args[-1].rsplit("/", 1)[1]
    assert out.stat().st_size > 1000


def test_plot_bad_suffix_fails_before_work(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tokspeed", "predict", "llama-3-8b", "--hardware", "rtx-4090",
                        "--plot", str(tmp_path / "p.jpg")], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
