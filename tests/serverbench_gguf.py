"""Write a tiny llama GGUF (random F32 weights, byte-level SPM vocab) that llama.cpp loads and serves.

Shape: 2 layers, d_model 64, 4 heads (head dim 16), FFN 128, context 512. Vocab (259 tokens):
0 ``<unk>``, 1 ``<s>`` (BOS), 2 ``</s>`` (EOS), then the 256 byte tokens ``<0x00>``..``<0xFF>``.
With no other pieces, llama.cpp's SPM tokenizer turns every UTF-8 byte of the (space-prefixed,
``' '`` -> ``'▁'``) text into one byte token, so a prompt's token count is known by hand:
``1 (BOS) + len(("▁" + text.replace(" ", "▁")).encode())``.

The output is steered to printable ASCII (bytes 0x21..0x7E, one character per token, never EOS):
every token embedding has 1.0 in dimension 0 (the rest is N(0, 0.02²) noise, and the layers only
add small terms), so after the final RMSNorm dimension 0 is large and positive; ``output.weight``
puts -10 in dimension 0 for every other token, lowering its logit by about 80. So each generated
token is one visible character: one stream chunk per token, and exactly max_tokens tokens.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

N_LAYERS, D_MODEL, N_HEADS, D_FFN, N_CTX = 2, 64, 4, 128, 512
SPECIAL = ["<unk>", "<s>", "</s>"]
VOCAB = SPECIAL + [f"<0x{b:02X}>" for b in range(256)]


def expected_prompt_tokens(text: str) -> int:
    return 1 + len(("\u2581" + text.replace(" ", "\u2581")).encode("utf-8"))


def write_tiny_llama(path: Path, seed: int = 0) -> Path:
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tokspeed-tiny-test")
    w.add_context_length(N_CTX)
    w.add_embedding_length(D_MODEL)
    w.add_block_count(N_LAYERS)
    w.add_feed_forward_length(D_FFN)
    w.add_head_count(N_HEADS)
    w.add_head_count_kv(N_HEADS)
    w.add_rope_dimension_count(D_MODEL // N_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(VOCAB)
    w.add_token_scores([0.0] * len(VOCAB))
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def t(name, *shape):  # numpy shape is (rows, cols) = GGUF (cols, rows) reversed
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    V = len(VOCAB)
    embd = (rng.standard_normal((V, D_MODEL)) * 0.02).astype(np.float32)
    embd[:, 0] = 1.0
    w.add_tensor("token_embd.weight", embd)
    for i in range(N_LAYERS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(D_MODEL, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", D_MODEL, D_MODEL)
        t(f"blk.{i}.attn_k.weight", D_MODEL, D_MODEL)
        t(f"blk.{i}.attn_v.weight", D_MODEL, D_MODEL)
        t(f"blk.{i}.attn_output.weight", D_MODEL, D_MODEL)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(D_MODEL, dtype=np.float32))
        t(f"blk.{i}.ffn_gate.weight", D_FFN, D_MODEL)
        t(f"blk.{i}.ffn_up.weight", D_FFN, D_MODEL)
        t(f"blk.{i}.ffn_down.weight", D_MODEL, D_FFN)
    w.add_tensor("output_norm.weight", np.ones(D_MODEL, dtype=np.float32))
    out = (rng.standard_normal((V, D_MODEL)) * 0.02).astype(np.float32)
    allowed = [VOCAB.index(f"<0x{b:02X}>") for b in range(0x21, 0x7F)]
    banned = np.ones(V, dtype=bool)
    banned[allowed] = False
    out[banned, 0] = -10.0
    w.add_tensor("output.weight", out)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(cmd: list[str], url: str, ready_path: str, log_path: Path, name: str, wait_s: float):
    """Start ``cmd`` (a server on ``url``), wait until ``ready_path`` answers 200 (failing the test, with
    the server's log, if it exits or does not come up in ``wait_s``), yield, then stop it."""
    import subprocess
    import time

    import httpx
    import pytest

    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited: " + log_path.read_text()[-2000:])
            try:
                if httpx.get(url + ready_path, timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not come up in {wait_s:g} s")
            time.sleep(0.3)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
