"""Names as people write them (issue 29): vendor words and memory sizes in device names, a default for a shared
name with a note naming the others, `cpu`, Macs by memory and --memory over a catalog device, model names of
another version never mapped silently, a config in a `configs` folder titled by its model."""

import json

import pytest

from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware, lookup_hardware
from tokspeed.models.catalog import _entries, _versions, load_entry_raw, resolve_id
from tokspeed.models.hf_config import config_title

from conftest import run_cli


@pytest.mark.parametrize("name", ["RTX 4090 24GB", "GeForce RTX 4090", "NVIDIA GeForce RTX 4090", "rtx 4090"])
def test_a_4090_however_written(name):
    assert get_hardware(name).id == "rtx-4090"


@pytest.mark.parametrize("name,taken,others", [
    ("h100", "h100-sxm", ("h100-pcie", "h100-nvl")),
    ("M2 Max", "m2-max-30", ("m2-max-38",)),
    ("mac studio m2 ultra", "m2-ultra-60", ("m2-ultra-76",)),
    ("MacBook Pro M3 Max", "m3-max-30", ("m3-max-40",)),
    ("4060 Ti", "rtx-4060-ti-8g", ("rtx-4060-ti-16g",)),
])
def test_a_shared_name_takes_the_common_variant_and_names_the_others(name, taken, others):
    hw, note = lookup_hardware(name)
    assert hw.id == taken and all(o in note for o in others) and "also:" in note


def test_every_default_variant_is_a_catalog_device_among_the_names_candidates():
    from tokspeed.hardware.catalog import _index, default_variants
    from tokspeed.hardware.names import name_key

    for name, (eid, why) in default_variants().items():
        assert get_hardware(eid).id == eid and why
        shared = _index().ambiguous.get(name_key(name))
        assert shared is None or eid in shared, name
    # every shared name has a default (directly or through a name shared by the same devices)
    for key in _index().ambiguous:
        assert _index().default_of(key) is not None, key


def test_cpu_is_a_named_default_cpu():
    hw, note = lookup_hardware("cpu")
    assert hw.kind == "cpu" and hw.id == "ddr5-5600-2ch" and "probe" in note


def test_a_mac_by_memory():
    # an M4 with 16 GB: the 10-core M4's bandwidth, 16 GB of which Metal gives a model 2/3 (below 36 GB)
    hw, note = lookup_hardware("m4-16gb")
    assert hw.id == "m4-10" and hw.memory_gb == 16 and hw.usable_bytes == pytest.approx(16 * 2**30 * 2 / 3)
    assert hw.bandwidth_gbps == get_hardware("m4-10").bandwidth_gbps and "16 GB" in note
    assert lookup_hardware("Apple M4 Pro 48GB")[0].memory_gb == 48


def test_memory_overrides_a_catalog_device_on_the_command_line():
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "m4-10", "--memory", "16GB", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["memory"]["capacity_bytes"] == pytest.approx(16 * 2**30 * 2 / 3)   # 16 GB = 16 GiB
    r = run_cli("predict", "llama-3.1-8b", "--hardware", "h100", "--json")
    assert r.returncode == 0 and "tokspeed: note: hardware 'h100' taken as h100-sxm" in r.stderr
    assert json.loads(r.stdout)["hardware"] == "h100-sxm"


def test_no_model_number_is_no_device():
    with pytest.raises(UserError):
        get_hardware("NVIDIA Laptop GPU")


def test_a_model_name_of_another_version_is_not_mapped_silently():
    # Mistral Small 3 (2501) has another rope_theta and window than 3.1 / 3.2 (their record's notes): not mapped
    assert resolve_id("Mistral-Small-24B-Instruct-2501") is None
    assert resolve_id("Mistral-Small-3.0-24B-Instruct") is None
    assert resolve_id("mistralai/Mistral-Small-3.2-24B-Instruct-2506") == "mistral-small-3.2-24b"
    assert resolve_id("mistralai/Mistral-Small-3.1-24B-Instruct-2503") == "mistral-small-3.1-24b"   # its own entry
    r = run_cli("predict", "Mistral-Small-24B-Instruct-2501", "--hardware", "rtx-4090")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    # no catalog alias names a version or release date its entry is not
    for mid, path in _entries().items():
        raw = load_entry_raw(path)
        own = _versions(" ".join([mid, raw.get("name", ""), raw.get("hf_repo", "")]))
        for alias in raw.get("aliases", []):
            assert _versions(alias) <= own, (mid, alias)


def test_a_config_in_a_configs_folder_is_titled_by_its_model(tmp_path):
    cfg = {"_name_or_path": "Qwen/Qwen3-8B", "model_type": "qwen3"}
    assert config_title(tmp_path / "configs" / "config.json", cfg) == "Qwen3-8B"
    assert config_title(tmp_path / "Qwen3-8B" / "config.json", {}) == "Qwen3-8B"
    assert config_title(tmp_path / "models" / "my-model.json", {}) == "my-model"
    assert config_title(tmp_path / "configs" / "config.json", {"architectures": ["LlamaForCausalLM"]}) == \
        "LlamaForCausalLM"
