"""Multi-GPU: the --parallel grammar, memory per device, all-reduce volume, minimal device counts."""

import pytest

from scale_models import LLAMA31_405B, LLAMA3_70B, LLAMA3_8B
from tokspeed.errors import UserError
from tokspeed.predict import predict
from tokspeed.scale.interconnect import device_link, ring_allreduce_bytes
from tokspeed.scale.parallel import Parallel, parse_parallel, split_layers
from tokspeed.advise.plan import min_devices
from tokspeed.hardware.catalog import get_hardware

# Llama 3.1 405B at F16 (norms F32), by hand from the config (L=126, d=16384, 128 heads, 8 KV heads,
# d_ff=53248, vocab 128256):
#   per layer params 16384*16384*2 + 2*16384*1024 + 3*16384*53248 = 3,187,671,040 (+ 2*16384 norm)
#   per layer bytes 3,187,671,040*2 + 32,768*4 = 6,375,473,152
#   embedding = LM head = 128256*16384*2 = 4,202,692,608; final norm 16384*4
L405 = 3_187_671_040 * 2 + 2 * 16384 * 4
E405 = 128256 * 16384 * 2
W405 = 126 * L405 + 2 * E405 + 16384 * 4


def test_parse_parallel():
    assert parse_parallel(None, 1) == Parallel()
    assert parse_parallel(None, 4, "llama.cpp-cuda") == Parallel(pp=4, style="split")
    assert parse_parallel(None, 4, "vllm") == Parallel(tp=4, style="tp")
    assert parse_parallel("tp", 8) == Parallel(tp=8, style="tp")
    assert parse_parallel("pp", 2) == Parallel(pp=2, style="pp")
    assert parse_parallel("tp=4,pp=2", 8) == Parallel(tp=4, pp=2, style="tp+pp")
    assert parse_parallel("tp=4,pp=2", 1).n_devices == 8
    for bad, n in (("tp=3,pp=2", 4), ("zz", 2), ("tp=0", 1), ("none", 2)):
        with pytest.raises(UserError):
            parse_parallel(bad, n)


def test_split_layers_is_even_and_contiguous():
    blocks = split_layers(126, 11)           # 126 = 11*11 + 5: five stages take 12 layers
    assert blocks[0][0] == 0 and blocks[-1][1] == 126
    assert all(a1 == b0 for (_, a1), (b0, _) in zip(blocks, blocks[1:]))
    sizes = sorted(b - a for a, b in blocks)
    assert sizes == [11] * 6 + [12] * 5
    assert blocks[0][1] - blocks[0][0] == 11 and blocks[-1][1] - blocks[-1][0] == 11   # ends hold embedding/head
    with pytest.raises(UserError):
        split_layers(4, 5)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_allreduce_bytes_per_token(n):
    # Megatron TP: 2 all-reduces per layer of d_model values at 2 bytes; a ring moves 2(N-1)/N of it
    p = predict(LLAMA3_70B, "h100-sxm", engine="vllm", prompt=0, gen=1, gpus=n, parallel="tp")
    par = p.extra["parallel"]
    msg = 8192 * 2
    assert par["allreduce_message_bytes_per_token"] == msg
    assert par["allreduces_per_token"] == 2 * 80
    hand = {2: 2_621_440, 4: 3_932_160, 8: 4_587_520}[n]      # 160 * 2(N-1)/N * 16,384
    assert par["allreduce_bytes_per_token_per_device"] == hand == 160 * ring_allreduce_bytes(msg, n)
    assert par["tp_link"]["per_direction_gbps"] == 450        # NVLink 4: 900 GB/s bidirectional


def test_links_per_direction():
    assert device_link(get_hardware("h100-sxm"), 8).per_direction_bytes_s == 450e9
    assert device_link(get_hardware("h100-sxm"), 16).kind == "network"     # beyond one HGX board: two servers
    assert device_link(get_hardware("rtx-4090"), 2).per_direction_bytes_s == 31.5e9   # no NVLink on Ada
    assert device_link(get_hardware("rtx-3090"), 2).kind == "scale-up"     # NVLink bridge, pairs only
    assert device_link(get_hardware("rtx-3090"), 4).kind == "pcie"
    assert device_link(get_hardware("mi300x"), 8).per_direction_bytes_s == 448e9   # Infinity Fabric 896 bidir


def test_tp_splits_weights_and_kv_per_device():
    one = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=0, gen=1, context=8192)
    two = predict(LLAMA3_8B, "h100-sxm", quant="F16", engine="vllm", prompt=0, gen=1, context=8192, gpus=2,
                  parallel="tp")
    (dev,) = two.extra["devices"]["per_device"]
    assert dev["count"] == 2
    assert dev["weights_bytes"] == pytest.approx(16_061_054_976 / 2)
    assert dev["kv_bytes"] == pytest.approx(one.memory.kv_bytes / 2)       # 8 KV heads -> 4 per rank
    assert two.memory.capacity_bytes == 2 * one.memory.capacity_bytes


def test_tp_beyond_kv_heads_replicates_kv():
    p = predict(LLAMA31_405B, "h100-sxm", quant="F16", engine="vllm", prompt=0, gen=1, context=4096, gpus=16,
                parallel="tp")
    (dev,) = p.extra["devices"]["per_device"]
    kv_total = 126 * 2 * 8 * 128 * 2 * (4096 + 1)     # K and V, 8 heads x 128, f16, 4097 cached tokens
    assert dev["kv_bytes"] == pytest.approx(kv_total / 8)   # 16 ranks, 8 KV heads: each rank holds one


def test_tp_needs_heads_to_split():
    with pytest.raises(UserError):
        predict(LLAMA31_405B, "h100-sxm", engine="vllm", gpus=12, parallel="tp")
    # llama.cpp's row split cuts matrix rows anywhere (3 GPUs for 32 heads is fine)
    assert predict("llama-2-7b", "rtx-3090", gpus=3, parallel="tp").extra["parallel"]["row_split"]


def test_405b_fp16_weights():
    p = predict(LLAMA31_405B, "h100-sxm", quant="F16", prompt=0, gen=1)
    assert W405 == 811_715_067_904                                 # ≈ 810 GB, as the seeds say
    # llama.cpp (the default engine) keeps the token embedding in host RAM: the H100s hold the rest
    assert p.memory.weights_bytes == W405 - E405 and p.memory.host_bytes == E405
    # by weights alone that is ceil(811.7 / 85.9) = 10 H100s of 80 GiB (test_405b_fp16_minimal_h100_count_with_layer_split)


def test_405b_fp16_minimal_h100_count_with_layer_split():
    # an H100 holds 80 GiB = 85.90 GB. 11 GPUs: 126 = 11*11 + 5, so the fullest stage holds 12 layers:
    #   12 * 6,375,473,152 = 76.51 GB weights + KV 12 layers * 8193 tok * 4096 B = 0.40 GB
    #   + 0.5 GiB llama.cpp runtime + the compute buffer llama.cpp reserves for a full 512-token micro-batch
    #   whatever the prompt (llama-context.cpp, "reserve worst-case graph"), its logits (512 * 128,256 * 4 B) on the
    #   last device only: 512 * (3 * 53,248 + 4 * 16,384) * 4 B = 0.46 GB -> 77.91 GB
    #   (llama.cpp's split, il * 11 // 127, puts 12 layers on six of them, the last 10 and the output)
    buffer = 512 * (3 * 53248 + 4 * 16384) * 4
    stage = 12 * L405 + 12 * 8193 * 4096 + 0.5 * 2**30 + buffer
    p = predict(LLAMA31_405B, "h100-sxm", quant="F16", prompt=0, gen=1, context=8192, gpus=11, parallel="split")
    assert max(d["total_bytes"] for d in p.devices["per_device"]) == pytest.approx(stage, rel=1e-9)
    # 10 GPUs: il * 10 // 127 puts 13 layers on seven of them, the fullest: 82.88 + 0.44 + 0.54 + 0.46 GB = 84.32 GB
    # <= 85.90: fits; 9 GPUs: 14 layers = 89.26 GB of weights alone: does not
    stage10 = 13 * L405 + 13 * 8193 * 4096 + 0.5 * 2**30 + buffer
    assert stage10 <= 80 * 2**30 < 14 * L405
    assert min_devices(LLAMA31_405B, "h100-sxm", quant="F16", parallel="split", context=8192) == 10
    # at 128K context a layer is 6.375 GB + 131,073 tok * 4096 B = 6.91 GB: 12 fit in 85.90 - 0.54 - 0.46 GB
    # (82.95 GB), 13 do not (89.86 GB); 11 GPUs hold at most 12 each (above)
    assert 12 * (L405 + 131073 * 4096) + 0.5 * 2**30 + buffer <= 80 * 2**30 < 13 * (L405 + 131073 * 4096)
    assert min_devices(LLAMA31_405B, "h100-sxm", quant="F16", parallel="split", context=131072) == 11
    # tensor parallel must divide 128 heads: 16 GPUs
    assert min_devices(LLAMA31_405B, "h100-sxm", quant="F16", engine="vllm", parallel="tp", context=8192) == 16


def test_memory_per_device_for_tp_and_pp():
    p = predict(LLAMA3_70B, "h100-sxm", quant="F16", engine="vllm", prompt=0, gen=1, gpus=8, parallel="tp=4,pp=2")
    devs = p.extra["devices"]["per_device"]
    assert [d["count"] for d in devs] == [4, 4] and p.extra["devices"]["count"] == 8
    assert sum(d["weights_bytes"] * d["count"] for d in devs) == pytest.approx(p.memory.weights_bytes)
    assert p.extra["parallel"]["stages"] == [{"name": "gpu0-3", "layers": [0, 40], "tp": 4},
                                             {"name": "gpu4-7", "layers": [40, 80], "tp": 4}]


def test_tp_speeds_up_memory_bound_decode_and_split_does_not():
    one = predict(LLAMA3_70B, "h100-sxm", quant="F16", engine="ideal", prompt=0, gen=1)
    tp4 = predict(LLAMA3_70B, "h100-sxm", quant="F16", engine="ideal", prompt=0, gen=1, gpus=4, parallel="tp")
    sp4 = predict(LLAMA3_70B, "h100-sxm", quant="F16", engine="ideal", prompt=0, gen=1, gpus=4, parallel="split")
    assert 3.5 < tp4.decode.bound_tok_s / one.decode.bound_tok_s <= 4.0
    assert sp4.decode.bound_tok_s <= one.decode.bound_tok_s


def test_pipeline_micro_batches_multiply_throughput_only_when_compute_bound():
    kw = dict(quant="F16", engine="ideal", prompt=0, gen=1, gpus=4)
    # batch 2048 is past the ridge (~300): each of 4 micro-batches of 512 keeps one stage busy, so a
    # step takes ~1/4 of the layer split's, where one batch walks the 4 stages in turn. Less than 4x:
    # the last stage also runs the LM head (the slowest stage sets the pace) and micro-batches of 512
    # still spend some time reading weights.
    pp = predict(LLAMA3_8B, "h100-sxm", batch=2048, parallel="pp", **kw)
    split = predict(LLAMA3_8B, "h100-sxm", batch=2048, parallel="split", **kw)
    assert 3.0 < pp.decode.aggregate_tok_s / split.decode.aggregate_tok_s <= 4.0
    # memory bound (batch 4): every micro-batch re-reads its stage's weights, so a round costs
    # 4 x the slowest stage (the one with the LM head) >= the sum of the stages: no gain
    pp4 = predict(LLAMA3_8B, "h100-sxm", batch=4, parallel="pp", **kw)
    split4 = predict(LLAMA3_8B, "h100-sxm", batch=4, parallel="split", **kw)
    assert pp4.decode.aggregate_tok_s <= split4.decode.aggregate_tok_s * (1 + 1e-9)
