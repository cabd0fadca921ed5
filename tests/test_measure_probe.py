"""The probes count bytes as STREAM does and the CLI writes a loadable profile."""

import json

import pytest

from tests.conftest import run_cli

torch = pytest.importorskip("torch")

from tokspeed.measure.probe_cpu import buffer_bytes, probe_bandwidth, probe_matmul, probe_matvec  # noqa: E402


def test_bandwidth_probe_counts_stream_bytes():
    size = 8 * 2**20
    r = {x.name: x for x in probe_bandwidth(size, repeats=3)}
    assert r["cpu_read"].work == size            # one array read
    assert r["cpu_copy"].work == 2 * size        # read + write
    assert r["cpu_triad"].work == 3 * size       # two reads + one write
    assert all(x.value > 0 and x.timing.repeats == 3 for x in r.values())


def test_matvec_and_matmul_work():
    mv = probe_matvec(256, ("fp32",), repeats=3)[0]
    assert mv.work == 256 * 256 * 4
    bf = probe_matvec(256, ("bf16",), repeats=3)[0]
    assert bf.work == 512 * 256 * 2       # twice the rows: as many bytes as the fp32 matrix
    mm = probe_matmul(64, ("bf16",), repeats=3)[0]
    assert mm.work == 2 * 64**3 and mm.unit == "TFLOP/s"


def test_buffer_never_takes_more_than_a_quarter_of_free_ram():
    assert buffer_bytes(2**30, available=1.2 * 2**30 * 12) == 2**30
    assert buffer_bytes(2**30, available=12 * 2**28) == 2**28


def test_probe_cli_writes_profile(tmp_path):
    out = tmp_path / "p.toml"
    r = run_cli("probe", "--quick", "--repeats", "3", "--device", "cpu", "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["profile_path"] == str(out)
    read = next(x for x in data["results"] if x["name"] == "cpu_read")
    # the profile keeps 2 decimals (measure/profile.py): off by at most 0.005 GB/s, whatever the machine's speed
    assert data["hardware"]["bandwidth_gbps"] == pytest.approx(read["value"], abs=0.005 + 1e-12)
    from tokspeed.hardware.catalog import hardware_from_toml

    assert hardware_from_toml(out).bandwidth_gbps == data["hardware"]["bandwidth_gbps"]


def test_probe_rejects_too_few_repeats(tmp_path):
    r = run_cli("probe", "--repeats", "1", "-o", tmp_path / "x.toml")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
