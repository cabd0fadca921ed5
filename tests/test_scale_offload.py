"""Offload: llama.cpp layers on the CPU vs weights streamed over the host link (hand-computed)."""

import math

import pytest

from scale_models import LLAMA3_70B, LLAMA3_8B
from tokspeed.errors import UserError
from tokspeed.hardware.catalog import get_hardware
from tokspeed.predict import predict
from tokspeed.scale.offload import vram_vs_host_ratio

# Llama 3 8B at F16 (norms F32), by hand from the config:
#   per layer: (4096*4096*2 + 2*4096*1024 + 3*4096*14336) * 2 B + 2*4096 * 4 B = 436,240,384 B
#   embedding table 128256*4096*2 = 1,050,673,152 B; head = the same + final norm 4096*4 B
PER_LAYER = (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) * 2 + 2 * 4096 * 4
EMBD = 128256 * 4096 * 2
HEAD = EMBD + 4096 * 4
RESIDENT = 32 * PER_LAYER + EMBD + HEAD
ROW = 4096 * 2          # one embedding row read per token


def ideal(**kw):
    return predict(LLAMA3_8B, "rtx-4090", quant="F16", engine="ideal", prompt=0, gen=1, **kw)


def test_pcie4_x16_vs_gddr6x_is_the_seeds_30x():
    hw = get_hardware("rtx-4090")
    assert hw.bandwidth_gbps == 1008          # GDDR6X, 384-bit at 21 Gb/s
    assert hw.host_link_gbps == 31.5          # PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8, per direction
    assert vram_vs_host_ratio(hw) == pytest.approx(1008 / 31.5) == pytest.approx(32.0)
    assert 28 <= vram_vs_host_ratio(hw) <= 35   # "~30x" in the seeds


def test_streaming_every_weight_over_pcie_is_about_30x_slower():
    vram = ideal()
    streamed = ideal(offload="stream", gpu_layers=0)
    assert streamed.extra["offload"]["weights_in_ram_bytes"] == RESIDENT     # 16,061,054,976 B
    # the GPU still reads what it computes; the copy adds every resident byte at 31.5 GB/s
    t_hand = RESIDENT / 31.5e9 + vram.decode.ms_per_token / 1e3
    assert 1 / streamed.decode.bound_tok_s == pytest.approx(t_hand, rel=1e-9)
    ratio = vram.decode.bound_tok_s / streamed.decode.bound_tok_s
    assert 30 <= ratio <= 36                  # 32x on the link, plus the VRAM pass itself
    assert streamed.decode.bound == "link"


def test_llamacpp_all_layers_on_cpu_run_at_ram_bandwidth():
    vram = ideal()
    cpu = ideal(gpu_layers=0)
    # DDR5-5600 dual channel: 2 x 64 bit x 5600 MT/s = 89.6 GB/s; VRAM/RAM = 1008 / 89.6 = 11.25
    assert cpu.extra["offload"]["cpu_bandwidth_gbps"] == 89.6
    assert vram.decode.bound_tok_s / cpu.decode.bound_tok_s == pytest.approx(1008 / 89.6, rel=0.01)


def test_llamacpp_partial_offload_adds_cpu_and_gpu_parts():
    p = ideal(gpu_layers=16)
    # layers 0-15 and the output layer on the CPU (llama.cpp: output on GPU only for -ngl > n_layers)
    cpu_bytes = 16 * PER_LAYER + ROW + HEAD
    gpu_bytes = 16 * PER_LAYER
    t_hand = cpu_bytes / 89.6e9 + gpu_bytes / 1008e9
    assert 1 / p.decode.bound_tok_s == pytest.approx(t_hand, rel=0.005)   # + activations and hand-offs
    stages = {s["name"]: s for s in p.extra["offload"]["decode_seconds_by_stage"]}
    assert stages["cpu"]["layers"] == [0, 16] and stages["gpu0"]["layers"] == [16, 32]
    gpu = [d for d in p.extra["devices"]["per_device"] if d["kind"] == "gpu"][0]
    assert gpu["weights_bytes"] == 16 * PER_LAYER


def test_llamacpp_prefill_copies_cpu_weights_to_the_gpu():
    p = predict(LLAMA3_8B, "rtx-4090", quant="F16", engine="ideal", prompt=512, gen=1, gpu_layers=0)
    # one 512-token micro-batch: every layer and the head cross PCIe once (embedding lookup stays on CPU)
    assert p.prefill.seconds >= (32 * PER_LAYER + HEAD) / 31.5e9


def test_auto_offload_takes_the_most_layers_that_fit():
    p = predict(LLAMA3_70B, "rtx-4090", quant="Q4_K_M", prompt=0, gen=1, context=4096, offload="auto")
    n = p.extra["offload"]["gpu_layers"]
    assert 0 < n < 81
    gpu = lambda q: [d for d in q.extra["devices"]["per_device"] if d["kind"] == "gpu"][0]  # noqa: E731
    assert gpu(p)["fits"]
    more = predict(LLAMA3_70B, "rtx-4090", quant="Q4_K_M", prompt=0, gen=1, context=4096, gpu_layers=n + 1)
    assert not gpu(more)["fits"]
    # ~40 GB of Q4_K_M in 24 GB: roughly half the layers fit
    assert 30 <= n <= 60


def test_full_offload_equals_the_single_gpu_prediction():
    a = ideal()
    b = ideal(gpu_layers=33)
    assert b.decode.bound_tok_s == pytest.approx(a.decode.bound_tok_s, rel=1e-9)


def test_offload_needs_a_discrete_gpu():
    with pytest.raises(UserError):
        predict(LLAMA3_8B, "m2-ultra-76", offload="auto")
    with pytest.raises(UserError):
        predict(LLAMA3_8B, "rtx-4090", offload="sideways")


def test_offloaded_model_fits_where_vram_alone_does_not():
    alone = predict(LLAMA3_70B, "rtx-4090", quant="Q4_K_M", prompt=0, gen=1)
    off = predict(LLAMA3_70B, "rtx-4090", quant="Q4_K_M", prompt=0, gen=1, offload="auto")
    assert not alone.memory.fits and off.memory.fits
    assert math.isfinite(off.decode.tok_s) and off.decode.tok_s < alone.decode.tok_s


def test_moe_experts_offload_reads_only_the_picked_experts_from_ram():
    # gpt-oss-20b MXFP4 (12.1 GB) does not fit an 8 GB RTX 4060 (8 GiB = 8.59 GB); llama.cpp --cpu-moe keeps every
    # routed expert in RAM. Decode then reads k/E = 4/32 of each layer's experts from RAM.
    from tokspeed.ledger import Role, forward_ops
    from tokspeed.scale.layout import layer_expert_bytes

    alone = predict("gpt-oss-20b", "rtx-4060", quant="MXFP4", engine="ideal", prompt=0, gen=1)
    assert not alone.memory.fits
    p = predict("gpt-oss-20b", "rtx-4060", quant="MXFP4", engine="ideal", prompt=0, gen=1, offload="experts",
                gpu_layers=0)
    host = [d for d in p.extra["devices"]["per_device"] if d["kind"] == "host"][0]
    experts = sum(layer_expert_bytes(p.spec, p.storage))
    assert host["weights_bytes"] == pytest.approx(experts)
    stages = {s["name"]: s for s in p.extra["offload"]["decode_seconds_by_stage"]}
    read = sum(o.weight_bytes for o in forward_ops(p.spec, p.storage, 2, 1, 1, 0) if o.role is Role.EXPERTS)
    assert read == pytest.approx(experts * 4 / 32)
    # the CPU stage is the picked experts' bytes (plus their activations) at 89.6 GB/s
    assert stages["cpu (experts)"]["seconds"] == pytest.approx(read / 89.6e9, rel=0.02)
    auto = predict("gpt-oss-20b", "rtx-4060", quant="MXFP4", prompt=0, gen=1, offload="experts")
    assert auto.memory.fits and 0 < auto.extra["offload"]["gpu_layers"] < 24
    with pytest.raises(UserError):
        predict(LLAMA3_8B, "rtx-4090", offload="experts")


def test_cpu_option_picks_the_host_memory_system():
    # DDR5-6400 dual channel: 2 x 8 B x 6400 MT/s = 102.4 GB/s
    vram = ideal()
    cpu = ideal(gpu_layers=0, cpu="ddr5-6400-2ch")
    assert cpu.extra["offload"]["cpu"] == "ddr5-6400-2ch"
    assert vram.decode.bound_tok_s / cpu.decode.bound_tok_s == pytest.approx(1008 / 102.4, rel=0.01)
