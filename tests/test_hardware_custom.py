"""Custom hardware: TOML files, flags, the `local` profile, and every way they can be wrong."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tokspeed.cli.main import main
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware, hardware_from_flags, hardware_from_toml

REPO = Path(__file__).resolve().parent.parent

GOOD = """
name = "My RTX 4090 (power-limited)"
kind = "gpu"
vendor = "NVIDIA"
memory_gb = 24
bandwidth_gbps = 1008
fp16_tflops = 165.2
host_link = "PCIe 4.0 x8"
"""


def _write(tmp_path, text, name="mine.toml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_custom_toml_loads_and_derives_the_host_link(tmp_path):
    p = _write(tmp_path, GOOD)
    hw = get_hardware(str(p))
    assert hw.id == "mine" and hw.memory_gb == 24 and hw.bandwidth_bytes_s == 1008e9
    assert hw.host_link_gbps == pytest.approx(31.5 * 8 / 16)  # PCIe 4.0 x16 row, half the lanes
    assert str(p) in hw.source
    assert hardware_from_toml(p) == hw


def test_minimal_contract_fields_are_enough(tmp_path):
    p = _write(tmp_path, 'name = "box"\nkind = "cpu"\nvendor = "me"\nmemory_gb = 64\nbandwidth_gbps = 89.6\n')
    hw = hardware_from_toml(p)
    assert hw.fp16_tflops == 0 and hw.usable_bytes == 64 * 2**30      # memory_gb is GiB


@pytest.mark.parametrize("text, words", [
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\n', "missing bandwidth_gbps"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\nbandwidth_gbps = -5\n', "positive"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 0\nbandwidth_gbps = 5\n', "positive"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = "24GB"\nbandwidth_gbps = 5\n', "positive number"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\nbandwidth_gbps = true\n', "positive number"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\nbandwidth_gbps = 5\nfp16_tflops = -1\n', "non-negative"),
    ('name = "x"\nkind = "tpu-ish"\nvendor = "v"\nmemory_gb = 24\nbandwidth_gbps = 5\n', "kind must be one of"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\nbandwith_gbps = 5\n', "unknown field"),
    ('name = "x"\nkind = "gpu"\nvendor = 7\nmemory_gb = 24\nbandwidth_gbps = 5\n', "must be a string"),
    ('name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\nbandwidth_gbps = 5\naliases = "a"\n', "list of strings"),
    ('name = "x\nkind = gpu\n', "not valid TOML"),
])
def test_bad_toml_is_one_user_error(tmp_path, text, words):
    p = _write(tmp_path, text)
    with pytest.raises(UserError) as e:
        hardware_from_toml(p)
    assert words in str(e.value)
    assert "\n" not in e.value.message


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such hardware file"):
        get_hardware(str(tmp_path / "nope.toml"))


def test_typo_in_field_name_is_suggested(tmp_path):
    p = _write(tmp_path, 'name = "x"\nkind = "gpu"\nvendor = "v"\nmemory_gb = 24\nbandwith_gbps = 5\n')
    with pytest.raises(UserError) as e:
        hardware_from_toml(p)
    assert "bandwidth_gbps" in e.value.suggestion


def test_from_flags():
    hw = hardware_from_flags("1008GB/s", "24GB", name="My 4090", fp16_tflops=165.2)
    assert (hw.bandwidth_gbps, hw.memory_gb, hw.fp16_tflops) == pytest.approx((1008, 24, 165.2))
    assert hw.kind == "gpu" and hw.id == "my-4090"
    assert hardware_from_flags("1TB/s", "80").bandwidth_gbps == pytest.approx(1000)
    # memory as labels write it: "24GB" of memory is 24 GiB, the same as "24GiB"; bandwidth's GB stays 10^9
    assert hardware_from_flags("100", "24GiB").memory_gb == 24 and hw.capacity_bytes == 24 * 2**30
    assert hardware_from_flags("100", "512MB").capacity_bytes == 512 * 2**20
    assert hw.bandwidth_bytes_s == 1008e9


@pytest.mark.parametrize("kwargs, words", [
    (dict(bandwidth="fast", memory="24GB"), "cannot read bandwidth"),
    (dict(bandwidth="1008GB/s", memory="lots"), "cannot read memory"),
    (dict(bandwidth="0GB/s", memory="24GB"), "must be positive"),
    (dict(bandwidth="1008GB/s", memory="24GB", kind="phone"), "kind must be one of"),
    (dict(bandwidth="1008GB/s", memory="24GB", fp16_tflops="many"), "must be a number"),
    (dict(bandwidth="1008GB/s", memory="24GB", fp16_tflops=-3), "non-negative"),
])
def test_from_flags_errors(kwargs, words):
    with pytest.raises(UserError, match=words):
        hardware_from_flags(**kwargs)


def test_local_profile(tmp_path, monkeypatch):
    missing = tmp_path / "none.toml"
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(missing))
    with pytest.raises(UserError) as e:
        get_hardware("local")
    assert "tokspeed probe -o" in e.value.suggestion
    # a probe profile may wrap the device in a [hardware] table
    _write(tmp_path, "[hardware]\n" + GOOD, name="none.toml")
    hw = get_hardware("LOCAL")
    assert hw.id == "local" and hw.bandwidth_gbps == 1008


def test_local_default_path_is_under_the_config_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKSPEED_LOCAL_PROFILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "tokspeed").mkdir()
    _write(tmp_path / "tokspeed", GOOD, name="local.toml")
    assert get_hardware("local").name == "My RTX 4090 (power-limited)"


# ---- CLI -----------------------------------------------------------------------------------------
def test_cli_unknown_device_is_one_line_exit_2():
    r = subprocess.run([sys.executable, "-m", "tokspeed", "hardware", "nosuch"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unknown hardware 'nosuch'" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_cli_one_device_json_has_everything(capsys):
    assert main(["hardware", "rtx-4090", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["id"] == "rtx-4090" and d["bandwidth_gbps"] == 1008 and d["fp16_tflops"] == 165.2
    assert "[LIGHT]" in d["source"] and d["notes"].startswith("[conf:")
    assert d["properties"]["ridge_flops_per_byte"] == pytest.approx(165.2e12 / 1008e9)
    assert d["properties"]["usable_bytes"] == 24 * 2**30       # 12 x 16 Gbit GDDR6X = 24 GiB


def test_cli_list_filters(capsys):
    assert main(["hardware", "--kind", "soc", "--json"]) == 0
    socs = json.loads(capsys.readouterr().out)
    assert socs and all(d["kind"] == "soc" for d in socs)
    assert {"m2-ultra-76", "dgx-spark"} <= {d["id"] for d in socs}
    assert main(["hardware", "h100", "--json"]) == 0  # ambiguous alias -> the matching devices
    assert {d["id"] for d in json.loads(capsys.readouterr().out)} == {"h100-sxm", "h100-pcie", "h100-nvl"}


def test_cli_table_and_links(capsys):
    assert main(["hardware", "--kind", "accelerator"]) == 0
    out = capsys.readouterr().out
    assert "tpu-v5e" in out and "gaudi-3" in out and "rtx-4090" not in out
    assert main(["hardware", "--links", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 14


def test_cli_kind_mismatch_is_a_user_error(capsys):
    assert main(["hardware", "rtx-4090", "--kind", "cpu"]) == 2
    assert "no cpu matches" in capsys.readouterr().err
