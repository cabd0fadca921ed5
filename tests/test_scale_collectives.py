"""Collectives by hand (tokspeed.scale.collectives): each algorithm's latency-bandwidth formula, the
crossovers between them, the all-reduce each serving engine picks by size, and the fabrics' rates."""

from types import SimpleNamespace

import pytest

from tokspeed.hardware.catalog import get_hardware
from tokspeed.scale import collectives as c
from tokspeed.scale.interconnect import device_link

NVLINK4 = 450e9 * 0.78        # H100/H200 NVLink 4: 450 GB/s a direction x NCCL's bus efficiency (fabrics.toml)
L_NV = 0.6e-6                 # NCCL LL step over NVLink (tuning.cc hwLat)
BASE = 6.6e-6                 # NCCL LL ring base latency (tuning.cc baseLat)
ONESHOT = 7.5e-6              # custom one-shot fixed latency (fabrics.toml)


def h200_fabric(n=8):
    hw = get_hardware("h200-sxm")
    return c.fabric(device_link(hw, n), n, hw), hw


def test_fabric_of_an_h200_baseboard():
    f, _ = h200_fabric()
    assert f.kind == "nvswitch" and f.fully_connected
    assert f.rate == pytest.approx(NVLINK4)
    assert (f.hop_s, f.nccl_base_s, f.oneshot_s) == pytest.approx((L_NV, BASE, ONESHOT))


def test_algorithms_by_hand():
    f, _ = h200_fabric()
    m, n = 4 * 2880 * 2, 8          # gpt-oss-120b: 4 decode tokens x d_model 2880 x BF16 = 23,040 bytes
    # one-shot: every GPU reads the whole message from its 7 peers: a1 + (N - 1) M / B
    assert c.oneshot_allreduce_s(f, m, n) == pytest.approx(7.5e-6 + 7 * 23040 / 351e9)
    # two-shot: reduce-scatter + all-gather, one more barrier: a1 + 2 L + 2 (N - 1) / N M / B
    assert c.twoshot_allreduce_s(f, m, n) == pytest.approx(7.5e-6 + 1.2e-6 + 1.75 * 23040 / 351e9)
    # NCCL ring: base + 2 (N - 1) L + 2 (N - 1) / N M / B = 6.6 + 8.4 us + bytes
    assert c.ring_allreduce_s(f, m, n) == pytest.approx(15e-6 + 1.75 * 23040 / 351e9)
    # all-gather into 1 MB: base + (N - 1) L + (N - 1) / N M / B; reduce-scatter the same
    assert c.allgather_s(f, 1e6, n) == pytest.approx(6.6e-6 + 4.2e-6 + 0.875e6 / 351e9)
    assert c.reducescatter_s(f, 1e6, n) == c.allgather_s(f, 1e6, n)
    # all-to-all of 1 MB sent per GPU, every pair at once; point-to-point of 1 MB
    assert c.all_to_all_s(f, 1e6, n) == pytest.approx(6.6e-6 + 0.875e6 / 351e9)
    assert c.p2p_s(f, 1e6) == pytest.approx(6.6e-6 + 1e6 / 351e9)
    for fn in (c.oneshot_allreduce_s, c.twoshot_allreduce_s, c.ring_allreduce_s):
        assert fn(f, m, 1) == 0.0


def test_crossovers_by_hand():
    f, _ = h200_fabric()
    n = 8
    # one-shot = two-shot where (N - 1) M / B = 2 L + 2 (N - 1) / N M / B: M = 2 L B / ((N - 1)(1 - 2 / N))
    m1 = 2 * L_NV * NVLINK4 / (7 * 0.75)
    assert m1 == pytest.approx(80_229, rel=1e-3)
    assert c.oneshot_allreduce_s(f, m1, n) == pytest.approx(c.twoshot_allreduce_s(f, m1, n))
    assert c.oneshot_allreduce_s(f, m1 / 2, n) < c.twoshot_allreduce_s(f, m1 / 2, n)
    assert c.oneshot_allreduce_s(f, m1 * 2, n) > c.twoshot_allreduce_s(f, m1 * 2, n)
    # one-shot = NCCL ring where 7.5 us + 7 M / B = 15 us + 1.75 M / B: M = 7.5 us x B / 5.25 = 501 kB
    m2 = 7.5e-6 * NVLINK4 / 5.25
    assert c.oneshot_allreduce_s(f, m2, n) == pytest.approx(c.ring_allreduce_s(f, m2, n))
    assert c.ring_allreduce_s(f, 2 * m2, n) < c.oneshot_allreduce_s(f, 2 * m2, n)


def test_what_each_engine_runs_by_size():
    f, hw = h200_fabric()
    kib, mib = 1024, 1024 * 1024
    pick = lambda eng, m, n=8, tokens=None: c.allreduce(eng, f, m, n, hw, tokens).algorithm    # noqa: E731
    # vLLM 0.13 on Hopper, 8 GPUs: custom one-shot below 256 KiB (its custom limit), torch symmetric memory
    # (two-shot) to 64 MiB, then NCCL; 4 GPUs: one-shot below 512 KiB, custom two-shot to 32 MiB
    assert [pick("vllm", m) for m in (200 * kib, 300 * kib, 70 * mib)] == ["one-shot", "two-shot", "nccl"]
    assert [pick("vllm", m, 4) for m in (500 * kib, 600 * kib, 40 * mib)] == ["one-shot", "two-shot", "nccl"]
    assert pick("vllm", 10 * mib, 2) == "one-shot"                 # 2 GPUs: always the one-stage kernel
    assert pick("vllm", 1 * kib, 3) == "nccl"                      # 3 GPUs: no custom kernel
    # SGLang 0.5.6: the same kernel below 8 MiB, else NCCL
    assert [pick("sglang", m) for m in (100 * kib, 4 * mib, 9 * mib)] == ["one-shot", "two-shot", "nccl"]
    # TensorRT-LLM AUTO: one-shot up to 128 tokens, two-shot above, NCCL past the 8 MiB workspace
    assert pick("tensorrt-llm", 128 * 7168 * 2, tokens=128) == "one-shot"
    assert pick("tensorrt-llm", 129 * 7168 * 2, tokens=129) == "two-shot"
    assert pick("tensorrt-llm", 9 * mib, tokens=700) == "nccl"
    assert pick("llama.cpp-cuda", 1 * kib) == "nccl"
    assert c.allreduce("vllm", f, 23040, 8, hw).seconds == pytest.approx(7.5e-6 + 7 * 23040 / NVLINK4)


def test_engine_choice_on_blackwell_and_cdna():
    kib, mib = 1024, 1024 * 1024
    b200 = get_hardware("b200")
    fb = c.fabric(device_link(b200, 8), 8, b200)
    assert fb.rate == pytest.approx(900e9 * 0.78)                  # NVLink 5: 1,800 GB/s bidirectional
    # vLLM 0.13 on Blackwell (10.0), 8 GPUs: custom kernel below 1 MiB (one-shot below 256 KiB), symmetric
    # memory to 128 MiB, then NCCL
    assert [c.allreduce("vllm", fb, m, 8, b200).algorithm for m in (200 * kib, 900 * kib, 100 * mib, 200 * mib)] \
        == ["one-shot", "two-shot", "two-shot", "nccl"]
    # vLLM on ROCm (MI300X): the custom kernel's own 8 MiB buffer, no symmetric-memory path
    mi = get_hardware("mi300x")
    fm = c.fabric(device_link(mi, 8), 8, mi)
    assert [c.allreduce("vllm", fm, m, 8, mi).algorithm for m in (4 * mib, 9 * mib)] == ["two-shot", "nccl"]
    # SGLang on ROCm: 16 MiB
    assert c.allreduce("sglang", fm, 12 * mib, 8, mi).algorithm == "two-shot"


def test_infinity_fabric_is_a_mesh_of_peer_links():
    # MI300X: 7 Infinity Fabric links of 64 GB/s a direction, one per peer: 2 GPUs share one link, 8 use 7
    hw = get_hardware("mi300x")
    two = c.fabric(device_link(hw, 2), 2, hw)
    eight = c.fabric(device_link(hw, 8), 8, hw)
    assert two.kind == "infinity-fabric" and two.rate == pytest.approx(64e9 * 0.78)
    assert eight.rate == pytest.approx(448e9 * 0.78)


def test_pcie_and_servers():
    # 8 L40S over PCIe 4.0 x16 (31.5 GB/s, x 0.88): no custom kernel past 2 GPUs; NCCL's ring steps at 1 us
    hw = get_hardware("l40s")
    f = c.fabric(device_link(hw, 8), 8, hw)
    assert f.kind == "pcie" and not f.fully_connected
    assert c.allreduce("vllm", f, 16384, 8, hw).seconds == pytest.approx(6.6e-6 + 14 * 1e-6
                                                                           + 1.75 * 16384 / (31.5e9 * 0.88))
    assert c.fabric(device_link(hw, 2), 2, hw).fully_connected        # a pair: vLLM's 2-GPU custom kernel
    # 32 GPUs over 4 servers: NCCL's tree pays 2 x 7 NVLink steps inside and 2 log2(4) network steps, the
    # ring 2 x 31 network steps
    net = SimpleNamespace(kind="network", per_direction_bytes_s=50e9)
    fn = c.fabric(net, 32)
    ring = 6.6e-6 + 62 * 2.7e-6 + 2 * 31 / 32 * 1e3 / (50e9 * 0.9)
    tree = 6.6e-6 + 14 * 0.6e-6 + 4 * 2.7e-6 + 2 * 31 / 32 * 1e3 / (50e9 * 0.9)
    assert c.ring_allreduce_s(fn, 1e3, 32) == pytest.approx(ring)
    assert c.nccl_allreduce_s(fn, 1e3, 32, servers=4) == pytest.approx(tree)


def test_predict_names_the_engines_all_reduce():
    # gpt-oss-120b (d_model 2880) on 8 x H200 under vLLM: one token's message is 2880 x 2 = 5,760 bytes, a
    # custom one-shot: 7.5 us + 7 x 5,760 / 351 GB/s; gpt-fast keeps NCCL as fitted (no algorithm named)
    from tokspeed import predict

    par = predict("gpt-oss-120b", "h200-sxm", gpus=8, parallel="tp", engine="vllm", quant="MXFP4", batch=4)
    par = (par if isinstance(par, dict) else par.to_dict())["parallel"]
    assert par["allreduce_algorithm"] == "one-shot"
    assert par["allreduce_us"] == pytest.approx(7.5 + 7 * 5760 / 351e3)
    other = predict("llama-3.1-8b", "a100-sxm", gpus=2, parallel="tp", engine="gpt-fast", batch=1)
    assert "allreduce_algorithm" not in (other if isinstance(other, dict) else other.to_dict())["parallel"]
