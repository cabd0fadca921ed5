"""llama.cpp backend on a GGUF written here: llama.cpp's logits match the reference decoder loaded
from the same file (a third, independent implementation), and `measure --backend llama.cpp` runs."""

import json

import numpy as np
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is the optional in-process backend (extra llamacpp)")
pytest.importorskip("gguf")

from tokspeed.measure.decoder import Decoder, DecoderConfig  # noqa: E402
from tokspeed.measure.gguf_write import write_gguf  # noqa: E402
from tokspeed.measure.weights import gguf_tensor_shapes, gguf_weights, random_weights, spec_from_gguf  # noqa: E402

CFG = DecoderConfig(n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, head_dim=16, d_ff=96, vocab_size=100)


@pytest.fixture
def gguf_file(tmp_path):
    return write_gguf(tmp_path / "tiny.gguf", CFG, random_weights(CFG, torch.float32, std=0.2))


def test_llama_cpp_logits_match_reference_decoder(gguf_file):
    meta, shapes = gguf_tensor_shapes(gguf_file)
    spec, over = spec_from_gguf(meta, shapes, "tiny")
    assert (spec.n_layers, spec.d_model, spec.n_kv_heads, spec.d_ff) == (2, 64, 2, 96)
    assert over["rope_interleaved"]           # llama architecture: adjacent-pair rotation
    model = Decoder(DecoderConfig.from_spec(spec, **over), gguf_weights(gguf_file)[0], max_seq=32)
    toks = [1, 5, 7, 9, 3, 42]
    ours = model(torch.tensor([toks]), 0)[0].numpy()
    llm = llama_cpp.Llama(str(gguf_file), n_ctx=32, logits_all=True, verbose=False, n_threads=2)
    llm.eval(toks)
    ref = np.array(llm.scores[len(toks) - 1])
    # llama.cpp keeps the KV cache in F16: agreement to ~1e-3 of the logit scale
    np.testing.assert_allclose(ours, ref, atol=5e-3 * np.abs(ref).max())


def test_measure_llama_cpp_backend(gguf_file, tmp_path, monkeypatch):
    prof = tmp_path / "local.toml"
    prof.write_text('name = "T"\nkind = "cpu"\nvendor = "x"\nmemory_gb = 24\nbandwidth_gbps = 40\nfp32_tflops = 0.2\n')
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(prof))
    r = run_cli("measure", gguf_file, "--backend", "llama.cpp", "--context", "0,16", "--prompt", "8", "--gen", "5",
                "--json")
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    assert run["quant"] == "F32" and run["backend"] == "llama.cpp"
    p = run["points"][1]
    # KV per step at depths 16..20: K and V, 2 layers, 32 values, F16 (2 bytes), depth + 1 positions
    assert p["kv_bytes_per_token"] == pytest.approx(sum(2 * 2 * 32 * (16 + i + 1) * 2 for i in range(5)) / 5)
    assert p["decode_tok_s"] > 0 and p["prefill_tok_s"] > 0
    assert run["engine_version"] == f"llama-cpp-python {llama_cpp.__version__}"     # what ran it (issue 10)
    # llama-cpp-python's context runs without FlashAttention unless asked; the prediction beside it says so
    assert run["settings"]["flash_attention"] is False
    assert "FlashAttention off" in p["predicted"]["engine"]


def test_text_on_a_gguf_without_a_tokenizer_is_one_error_line(gguf_file):
    # the GGUFs written here carry tokenizer.ggml.model = "no_vocab"; llama.cpp's tokenizer aborts the whole
    # process on them (GGML_ASSERT), so --text refuses first
    r = run_cli("measure", gguf_file, "--backend", "llama.cpp", "--text", "hello", "--gen", "5")
    assert r.returncode == 2 and "no tokenizer" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_measure_runs_flashattention_when_asked(gguf_file, tmp_path, monkeypatch):
    # --flash-attn on: the llama.cpp context runs it (the run file says so), and so does the prediction beside it
    prof = tmp_path / "local.toml"
    prof.write_text('name = "T"\nkind = "cpu"\nvendor = "x"\nmemory_gb = 24\nbandwidth_gbps = 40\nfp32_tflops = 0.2\n')
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(prof))
    r = run_cli("measure", gguf_file, "--backend", "llama.cpp", "--context", "0", "--prompt", "8", "--gen", "5",
                "--flash-attn", "on", "--json")
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    assert run["settings"]["flash_attention"] is True
    assert "FlashAttention on" in run["points"][0]["predicted"]["engine"]


def test_measure_a_quantized_gguf_rates_mfu_on_the_fp32_simd_figure(gguf_file, tmp_path, monkeypatch):
    """MFU of the FP32 SIMD rate llama.cpp's CPU kernels run at, not a probe's BF16 figure (on a CPU without BF16
    units torch's bf16 matmul crawls at ~1 GFLOP/s: a Q4_0 run read 5,400 % MFU): FLOPs per step x steps per
    second / 0.2 TFLOP/s. Q5_0: a type ggml-cpu's AMX kernels do not take (amx/common.h qtype_has_amx_kernels:
    Q4_0, Q4_1, Q8_0, K-quants, IQ4_XS); on a CPU with AMX tiles those kernels crash on this 64-wide tiny model
    (SIGSEGV in ggml_backend_amx_mul_mat, llama-cpp-python 0.3.36, seen on this session's Sapphire-Rapids-class CPU)."""
    import ctypes

    q8 = tmp_path / "tiny-q5.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_0
    assert llama_cpp.llama_model_quantize(str(gguf_file).encode(), str(q8).encode(), ctypes.byref(params)) == 0
    prof = tmp_path / "local.toml"
    prof.write_text('name = "T"\nkind = "cpu"\nvendor = "x"\nmemory_gb = 24\nbandwidth_gbps = 40\nfp32_tflops = 0.2\n'
                    'fp16_tflops = 0.001\n')
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(prof))
    r = run_cli("measure", q8, "--backend", "llama.cpp", "--context", "0", "--prompt", "8", "--gen", "5", "--json")
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    assert run["quant"] == "Q5_0"
    p = run["points"][0]
    assert p["mfu"] == pytest.approx(p["flops_per_step"] * p["decode_tok_s"] / 0.2e12, rel=1e-9) and p["mfu"] < 1


def test_llama_cpp_load_failure_says_why(gguf_file, tmp_path, monkeypatch):
    """A GGUF whose tensor data is cut short: llama.cpp's own reason, one line, exit 2 (issue 10)."""
    prof = tmp_path / "local.toml"
    prof.write_text('name = "T"\nkind = "cpu"\nvendor = "x"\nmemory_gb = 24\nbandwidth_gbps = 40\nfp32_tflops = 0.2\n')
    monkeypatch.setenv("TOKSPEED_LOCAL_PROFILE", str(prof))
    cut = tmp_path / "cut.gguf"
    data = gguf_file.read_bytes()
    cut.write_bytes(data[:len(data) - 4096])
    r = run_cli("measure", cut, "--backend", "llama.cpp", "--context", "0", "--prompt", "8", "--gen", "5")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "Failed to load model from file" not in lines[0], lines[0]     # llama.cpp's reason, or ours before it


def test_text_with_a_real_tokenizer(tmp_path):
    from tokspeed.measure.gguf_write import BYTE_VOCAB_SIZE

    cfg = DecoderConfig(n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, head_dim=16, d_ff=96,
                        vocab_size=BYTE_VOCAB_SIZE)
    path = write_gguf(tmp_path / "bytes.gguf", cfg, random_weights(cfg, torch.float32, std=0.2), byte_vocab=True)
    text = "서울 맛집 추천해줘"
    r = run_cli("measure", path, "--backend", "llama.cpp", "--text", text, "--gen", "4", "--json")
    assert r.returncode == 0, r.stderr
    ev = json.loads(r.stdout)["events"]
    # byte-level vocabulary: one token per UTF-8 byte, 8 Hangul syllables x 3 bytes + 2 spaces = 26
    assert ev[0]["kind"] == "prompt" and ev[0]["tokens"] == len(text.encode("utf-8")) == 26
    probs = [t[1] for t in ev[1]["top"]]
    assert ev[1]["kind"] == "candidates" and probs == sorted(probs, reverse=True) and sum(probs) <= 1
    assert 1 <= sum(e["kind"] == "token" for e in ev) <= 4
