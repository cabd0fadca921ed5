"""Ways to run a setup that does not fit (tokspeed.advise.alternatives): each way is checked against its own
definition (it fits, and one step less does not), and its figures against hand arithmetic."""

import pytest

from tokspeed import predict
from tokspeed.advise.alternatives import formats_for, is_hypothetical, ways_to_run
from tokspeed.hardware.spec import Hardware

# llama-3-8b: 8.03e9 parameters (Meta's model card). F16 weights ~16.1 GB; Q8_0 stores 34 bytes per
# 32 weights, ~8.5 GB. A 12 GB card holds neither F16 on one device nor anything F16 on fewer than 2.
CARD = Hardware(id="card-12", name="12 GB card", kind="gpu", vendor="test", memory_gb=12, bandwidth_gbps=500,
                fp16_tflops=100, host_link="PCIe 4.0 x16", host_link_gbps=31.5)


def _by_kind(ways):
    return {w["kind"]: w for w in ways}


def test_fitting_setup_has_no_alternatives():
    assert ways_to_run("llama-3-8b", CARD, quant="Q4_K_M") == []


def test_each_way_fits_and_the_step_before_does_not():
    ways = _by_kind(ways_to_run("llama-3-8b", CARD, quant="F16", gen=16))
    assert set(ways) >= {"offload", "gpus", "format"}

    g = ways["gpus"]
    # by hand: 16.1 GB of weights > 12 GB, 8 GB per card on 2 cards plus ~1 GB of runtime + buffers < 12 GB
    assert g["gpus"] == 2 and g["options"] == {"gpus": 2, "parallel": "split"}
    assert predict("llama-3-8b", CARD, quant="F16", gen=16, **g["options"]).memory.fits

    f = ways["format"]
    # the highest precision below F16 among GGUF formats is Q8_0 (8.5 bits/weight, ~8.5 GB), of which llama.cpp
    # keeps the token embedding (128,256 x 4,096 at 34 B per 32 = 0.56 GB) in host RAM: ~7.97 GB on the card
    assert f["quant"] == "Q8_0"
    assert 7.5e9 < f["weights_bytes"] < 8.5e9
    assert f["total_bytes"] <= 12e9 * 0.999

    o = ways["offload"]
    assert o["cpu_layers"] + o["gpu_layers"] == o["n_layers"] == 33     # 32 blocks + the output layer
    assert o["cpu_layers"] >= 1
    # the RAM-held share is read at dual-channel DDR5-5600 (89.6 GB/s): decode can be no faster than
    # those bytes at that bandwidth (16.1 GB / 33 per layer)
    cpu_bytes = o["cpu_layers"] * 16.06e9 / 33
    assert o["decode_tok_s"] < 89.6e9 / cpu_bytes
    for w in ways.values():
        assert w["description"] and "\n" not in w["description"]
        assert w["decode_tok_s_low"] <= w["decode_tok_s"] <= w["decode_tok_s_high"]


def test_longest_context_is_the_edge():
    # Llama 3.1 8B: a 128K window, so memory (not the window) is what limits the context on 24 GB
    opts = dict(quant="F16", prompt=512, gen=16)
    ways = _by_kind(ways_to_run("llama-3.1-8b", "rtx-4090", context=131072, **opts))
    c = ways["context"]["context"]
    assert predict("llama-3.1-8b", "rtx-4090", context=c, **opts).memory.fits
    assert not predict("llama-3.1-8b", "rtx-4090", context=c + 1, **opts).memory.fits
    # by hand: 24 GiB = 25.77 GB - 15.01 GB of weights on the card (16.06 GB less the 1.05 GB F16 token embedding
    # llama.cpp keeps in host RAM) - 0.38 GB compute buffer - 0.54 GB runtime = 9.84 GB / 128 KiB per token =
    # 75,058 tokens of context, less the 528 of prompt and generation: 74,530
    assert 74_000 < c < 75_000


def test_largest_batch_is_the_edge():
    opts = dict(quant="F16", prompt=512, gen=16, context=8192)
    b = _by_kind(ways_to_run("llama-3-8b", "rtx-4090", batch=64, **opts))["batch"]["batch"]
    assert predict("llama-3-8b", "rtx-4090", batch=b, **opts).memory.fits
    assert not predict("llama-3-8b", "rtx-4090", batch=b + 1, **opts).memory.fits
    # by hand: 9.84 GB free (above) / (8,720 tokens x 128 KiB = 1.14 GB per sequence) = 8.6: 8 sequences
    assert b == 8


def test_405b_on_a_4090_needs_a_dozen_cards():
    ways = _by_kind(ways_to_run("llama-3.1-405b", "rtx-4090", quant="Q4_K_M", gen=8))
    # ~243 GB of Q4_K_M weights / 24 GB per card -> at least 11 cards; buffers on each push it to 11-13
    assert 11 <= ways["gpus"]["gpus"] <= 13
    n = ways["gpus"]["gpus"]
    assert not predict("llama-3.1-405b", "rtx-4090", quant="Q4_K_M", gen=8, gpus=n - 1, parallel="split").memory.fits


def test_engine_formats_and_hypothetical_flag():
    assert "AWQ-4B" not in formats_for("llama.cpp-cuda") and "Q4_K_M" in formats_for("llama.cpp")
    assert "Q4_K_M" not in formats_for("vllm") and "FP8" in formats_for("vllm")
    p = predict("llama-3.1-70b", "rtx-4090", quant="Q4_K_M", gen=4)
    assert is_hypothetical(p)
    assert not is_hypothetical(predict("llama-3-8b", "rtx-4090", quant="Q4_K_M", gen=4))


@pytest.mark.parametrize("model", ["qwen3-30b-a3b"])
def test_moe_offers_expert_offload(model):
    ways = ways_to_run(model, "rtx-4070", quant="Q8_0", gen=8)
    modes = [w["mode"] for w in ways if w["kind"] == "offload"]
    assert modes == ["auto", "experts"]
    experts = [w for w in ways if w["kind"] == "offload" and w["mode"] == "experts"][0]
    assert experts["unit"] == "layers' experts" and experts["n_layers"] == 48   # Qwen3-30B-A3B: 48 layers


def test_a_weights_file_keeps_its_format(tmp_path):
    """The same tiny shape as a config.json (format free) and as a Q8_0 GGUF (format fixed), on a device 10 kB
    short of the Q8_0 total: a smaller format (Q4_K_M: ~4.8 bits/weight against 8.5, ~30 kB less for these 115k
    weights) would fit, so the config gets a "format" way and the file does not."""
    import json
    import os
    import sys

    pytest.importorskip("gguf")
    sys.path.insert(0, os.path.dirname(__file__))
    from files_fixtures import TINY, llama_config, write_llama_gguf

    gguf_path = write_llama_gguf(tmp_path / "tiny.gguf", shape=TINY, weight_type="Q8_0")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(llama_config(TINY)), encoding="utf-8")
    big = Hardware(id="big", name="big", kind="gpu", vendor="test", memory_gb=100, bandwidth_gbps=100, fp16_tflops=10)
    total = predict(gguf_path, big, gen=4).memory.total_bytes
    assert predict(cfg, big, quant="Q8_0", gen=4).memory.total_bytes == total
    small = Hardware(id="small", name="small", kind="soc", vendor="test", memory_gb=100, bandwidth_gbps=100,
                     fp16_tflops=10, usable_memory_gb=(total - 10_000) / 2**30)
    assert not predict(gguf_path, small, gen=4).memory.fits
    formats = [w for w in ways_to_run(cfg, small, quant="Q8_0", gen=4) if w["kind"] == "format"]
    assert len(formats) == 1 and formats[0]["weights_bytes"] < predict(cfg, big, quant="Q8_0").memory.weights_bytes
    assert "format" not in [w["kind"] for w in ways_to_run(gguf_path, small, gen=4)]
