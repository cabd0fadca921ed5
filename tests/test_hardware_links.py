"""Interconnect rows and host-link parsing: per direction, from the link rows."""

import pytest

from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware
from tokspeed.hardware.links import all_links, get_link, parse_host_link


def test_pcie_payload_rates_follow_the_encoding_arithmetic():
    # Gen3: 8 GT/s x 16 lanes x 128/130 / 8 bits = 15.75 GB/s one way; Gen4 doubles it; Gen5 again
    gen3 = 8e9 * 16 * 128 / 130 / 8 / 1e9
    assert get_link("pcie-3-x16").per_direction_gbps == pytest.approx(gen3, abs=0.01)
    assert get_link("PCIe 4.0 x16").per_direction_gbps == pytest.approx(2 * gen3, abs=0.02)
    assert get_link("pcie 5.0 x16").per_direction_gbps == pytest.approx(4 * gen3, abs=0.05)


def test_every_link_is_half_its_bidirectional_sum():
    assert len(all_links()) == 14
    for link in all_links():
        assert link.per_direction_gbps * 2 == pytest.approx(link.bidirectional_gbps)
        assert link.source


def test_host_link_ratios():
    g4, _ = parse_host_link("PCIe 4.0 x16")
    g5, _ = parse_host_link("PCIe 5.0 x16")
    x8, basis = parse_host_link("PCIe 4.0 x8")
    assert g5 / g4 == pytest.approx(2.0)
    assert x8 == pytest.approx(g4 / 2) and "8/16" in basis
    assert parse_host_link("PCIe Gen4 x16")[0] == g4


def test_catalog_devices_use_the_link_rows():
    assert get_hardware("rtx-4090").host_link_gbps == get_link("pcie-4-x16").per_direction_gbps
    assert get_hardware("h100-sxm").host_link_gbps == get_link("pcie-5-x16").per_direction_gbps
    assert get_hardware("v100-16g-sxm").host_link_gbps == get_link("pcie-3-x16").per_direction_gbps
    # the RTX 4060 Ti has only 8 PCIe lanes: half the offload bandwidth of an x16 Gen4 card
    assert get_hardware("rtx-4060-ti-16g").host_link_gbps == pytest.approx(31.5 / 2)
    # GH200: NVLink-C2C 900 GB/s bidirectional to Grace = 450 one way
    assert get_hardware("gh200-144g").host_link_gbps == 450


def test_other_host_link_texts():
    assert parse_host_link("NVLink-C2C 900 GB/s bidir to Grace")[0] == 450
    assert parse_host_link("Thunderbolt 5 (120 Gb/s)")[0] == 10  # Gb/s boost mode is not GB/s
    assert parse_host_link("n/a (unified-memory SoC)")[0] == 0
    assert parse_host_link("PCIe Gen5")[0] == 0  # no lane count: unknown, not guessed
    assert parse_host_link("")[0] == 0


def test_link_lookup_errors():
    with pytest.raises(UserError, match="ambiguous"):
        get_link("Infinity Fabric")
    with pytest.raises(UserError, match="unknown link"):
        get_link("nvlink 9")
