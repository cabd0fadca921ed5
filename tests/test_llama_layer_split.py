"""llama.cpp's own placement of a model on its devices (llama-model.cpp, ``load_tensors``): the layer split counts
the output as a layer, and the token embedding (the input layer) stays in host RAM whatever ``-ngl`` says."""

import pytest

from tokspeed.predict import predict
from tokspeed.scale.parallel import llama_split_layers


def test_layer_il_goes_to_the_device_whose_share_passes_il_over_n_layers_plus_one():
    # two equal GPUs: split points 0.5, 1.0; layer il on GPU 1 once il / (L + 1) >= 0.5
    # 48 layers (Qwen3-30B-A3B): il / 49 < 0.5 for il <= 24: 25 layers on GPU 0, 23 and the output on GPU 1
    assert llama_split_layers(48, 2) == [(0, 25), (25, 48)]
    # 36 layers (gpt-oss-120b): il / 37 < 0.5 for il <= 18: 19 + 17
    assert llama_split_layers(36, 2) == [(0, 19), (19, 36)]
    # 32 layers over 3: split points 1/3, 2/3; il / 33 passes 1/3 at il = 11 and 2/3 at il = 22
    assert llama_split_layers(32, 3) == [(0, 11), (11, 22), (22, 32)]
    # 4 layers over 4 GPUs: il / 5 -> GPUs 0, 0, 1, 2; the output (il = 4, 4 / 5 = 0.8) alone on GPU 3
    assert llama_split_layers(4, 4) == [(0, 2), (2, 3), (3, 4), (4, 4)]


def test_the_token_embedding_of_llama3_8b_stays_in_host_ram():
    # token_embd of Llama 3 8B Q4_K_M is Q4_K: 128,256 x 4,096 at 144 B per 256 = 295,501,824 B = 281.81 MiB, the
    # "CPU_Mapped model buffer size = 281.81 MiB" every llama.cpp log of that file prints beside the GPU's buffer
    embd = 128256 * 4096 * 144 // 256
    assert embd / 2**20 == pytest.approx(281.81, abs=0.005)
    gpu = predict("llama-3.1-8b", "rtx-4090", quant="Q4_K_M", engine="llama.cpp-cuda")
    assert gpu.memory.host_bytes == embd
    # the model's weights are the same file: on a SoC (one memory) the table counts against the device
    soc = predict("llama-3.1-8b", "m3-max", quant="Q4_K_M", engine="llama.cpp-metal")
    assert soc.memory.host_bytes == 0
    assert soc.memory.weights_bytes - gpu.memory.weights_bytes == embd
    # an engine that loads every weight onto the GPU keeps it there
    assert predict("llama-3.1-8b", "rtx-4090", quant="AWQ", engine="vllm").memory.host_bytes == 0


def test_a_tied_output_layer_is_a_copy_on_the_gpu():
    # Gemma 3 ties its output to token_embd: llama.cpp creates the output as a duplicate of the table on the last
    # device (TENSOR_DUPLICATED), so the GPU holds as much as before and host RAM holds the table too
    gpu = predict("gemma-3-4b", "rtx-4090", quant="Q8_0", engine="llama.cpp-cuda")
    soc = predict("gemma-3-4b", "m3-max", quant="Q8_0", engine="llama.cpp-metal")
    assert gpu.memory.weights_bytes == soc.memory.weights_bytes
    assert gpu.memory.host_bytes == 262208 * 2560 * 34 // 32     # 262,208 x 2,560 at Q8_0 (34 B per 32)


def test_gpt_oss_120b_on_two_r9700s_nears_gpu0s_capacity_between_16k_and_32k():
    # kyuz0/amd-r9700-ai-toolboxes (data/validation/calibration-3.csv c3-0074 / c3-0076), Vulkan RADV, two 32 GB
    # R9700s: 69.3 tok/s at a 16K depth, 8.9 tok/s at 32K, where GPU 0's buffers no longer fit and the driver pages
    # them to host memory. GPU 0 holds 19 of the 36 layers (above) and no embedding; an even split would hold 18
    kw = dict(quant="MXFP4", engine="llama.cpp-vulkan", gpus=2, prompt=0, gen=32)
    at16 = predict("gpt-oss-120b", "radeon-ai-pro-r9700", context=16384, **kw)
    at32 = predict("gpt-oss-120b", "radeon-ai-pro-r9700", context=32768, **kw)
    assert at16.extra["parallel"]["stages"][0]["layers"] == [0, 19]
    gpu0_16, gpu1_16 = at16.extra["devices"]["per_device"]
    gpu0_32, gpu1_32 = at32.extra["devices"]["per_device"]
    # the compute buffer is reserved for a full 512-token micro-batch although no prompt is run, and its logits
    # (512 x 201,088 vocabulary x 4 B) are on the device that runs the output layer only
    assert gpu1_16["activations_bytes"] - gpu0_16["activations_bytes"] == 512 * 201088 * 4
    # the 16K depth leaves GPU 0 more than the 0.5 GiB runtime reserve; 32K less: said, as the edge it is
    reserve = 0.5 * 2**30
    assert gpu0_16["capacity_bytes"] - gpu0_16["total_bytes"] > reserve
    assert 0 < gpu0_32["capacity_bytes"] - gpu0_32["total_bytes"] < reserve
    assert not any("runtime reserve" in w for w in at16.warnings)
    assert any(w.startswith("gpu0 has") and "runtime reserve" in w for w in at32.warnings)
    # the two GPUs and host RAM hold the whole model once
    one = predict("gpt-oss-120b", "m3-ultra", quant="MXFP4", engine="llama.cpp-metal", context=16384, prompt=0, gen=32)
    assert gpu0_16["weights_bytes"] + gpu1_16["weights_bytes"] + at16.memory.host_bytes == pytest.approx(
        one.memory.weights_bytes, rel=1e-12)


def test_every_device_sizes_its_compute_buffer_for_the_runs_micro_batch():
    # -ub 2048 at a 4,096-token context: llama.cpp reserves min(n_ctx, n_ubatch) = 2,048 tokens. Llama 3 8B's buffer
    # per token is 3 x 14,336 + 4 x 4,096 floats on each GPU, and its 128,256 logits on the one that runs the
    # output layer, all x 4 B (a 512-token prompt: the buffer is reserved for the full micro-batch all the same)
    kw = dict(quant="Q4_K_M", engine="llama.cpp-cuda", gpus=2, prompt=512, gen=16, ubatch=2048, n_batch=2048)
    gpu0, gpu1 = predict("llama-3-8b", "rtx-4090", context=4096, **kw).extra["devices"]["per_device"]
    assert gpu0["activations_bytes"] == 2048 * (3 * 14336 + 4 * 4096) * 4
    assert gpu1["activations_bytes"] == 2048 * (3 * 14336 + 4 * 4096 + 128256) * 4
    # no context beyond the run: n_ctx = 512 + 16 = 528 tokens bound the reserve
    gpu0, _ = predict("llama-3-8b", "rtx-4090", context=0, **kw).extra["devices"]["per_device"]
    assert gpu0["activations_bytes"] == 528 * (3 * 14336 + 4 * 4096) * 4
