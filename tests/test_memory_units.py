"""Device memory is counted in the bytes the part has: a label's "GB" of memory is GiB (2**30 bytes), while
bandwidth's GB/s stays 10^9 bytes per second. Hand figures: nvidia-smi's totals and the published parameter counts."""

import pytest

import tokspeed
from tokspeed.hardware.catalog import get_hardware
from tokspeed.units import parse_bytes, parse_capacity

MIB = 2**20


def test_an_h100_80gb_holds_80_gib():
    h = get_hardware("h100-sxm")
    assert h.capacity_bytes == 80 * 2**30 == 85_899_345_920
    assert h.bandwidth_bytes_s == 3.35e12                     # 3.35 TB/s: decimal, as NVIDIA prints it


@pytest.mark.parametrize("device, smi_mib", [
    ("h100-sxm", 81_559),        # nvidia-smi, H100 SXM 80GB HBM3
    ("a100-80g-sxm", 81_920),    # nvidia-smi, A100-SXM4-80GB
    ("rtx-4090", 24_564),        # nvidia-smi, GeForce RTX 4090 (12 x 16 Gbit GDDR6X = 24,576 MiB made)
    ("h200-sxm", 143_771),       # nvidia-smi, H200 "141 GB"
])
def test_the_catalog_capacity_covers_what_the_driver_shows(device, smi_mib):
    # the driver shows the made memory less a reserve of at most ~1 %; 10^9-byte "GB" fell 4-7 % short of it
    cap = get_hardware(device).capacity_bytes
    assert smi_mib * MIB <= cap <= smi_mib * MIB * 1.01


def test_a_users_memory_size_reads_like_a_label_and_bandwidth_stays_decimal():
    assert parse_capacity("24GB") == parse_capacity("24GiB") == parse_capacity("24") == 24 * 2**30
    assert parse_capacity("512 MB") == 512 * MIB and parse_capacity("1TB") == 2**40
    assert parse_bytes("24GB") == 24e9 and parse_bytes("1008GB/s") == 1.008e12


def test_llama_3_1_70b_fp8_leaves_room_for_kv_on_one_h100():
    # by hand: 70,553,706,496 params (Llama-3.1-70B); the FP8 checkpoint keeps the embedding and LM head
    # (128,256 x 8,192 = 1,050,673,152 each) at 2 bytes: 68.45e9 + 4.20e9 = 72.66e9 bytes of weights.
    # KV per token at F16: 80 layers x 2 (K, V) x 8 heads x 128 x 2 B = 327,680 B.
    weights = (70_553_706_496 - 2 * 1_050_673_152) + 2 * 1_050_673_152 * 2
    per_token = 80 * 2 * 8 * 128 * 2
    room = 80 * 2**30 - weights                        # 13.24e9 B before runtime and workspace
    p = tokspeed.predict("llama-3.1-70b", "h100-sxm", quant="FP8", engine="vllm")
    m = p.memory
    assert m.weights_bytes == pytest.approx(weights, rel=1e-4)
    assert m.fits and m.capacity_bytes == 80 * 2**30
    # at most room / per_token = 40,412 tokens; with ~1.5 GB of runtime and workspace about 36K. In 80e9 bytes
    # the same model had room for 7.3e9 / 327,680 = 22K tokens at most: under 32K
    assert 32_768 < m.max_context <= room // per_token
