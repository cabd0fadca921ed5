"""The reference decoder is a real decoder: its incremental (KV-cached) logits match a plain NumPy
forward pass written independently here (full causal attention recomputed from scratch, per-head
loops, complex-number rotary embedding, per-token expert loops) on tiny random weights."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tokspeed.errors import UserError  # noqa: E402
from tokspeed.measure.decoder import Decoder, DecoderConfig, StageTimer  # noqa: E402
from tokspeed.measure.weights import random_weights  # noqa: E402


def np_forward(cfg, W, tokens):
    """Logits [T, vocab] for every position of ``tokens`` (float64 NumPy)."""
    W = {k: v.double().numpy() for k, v in W.items()}
    T, hd, H, KV = len(tokens), cfg.head_dim, cfg.n_heads, cfg.n_kv_heads

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps) * w

    def rope(x, pos):  # x [hd]
        freqs = cfg.rope_theta ** (-np.arange(0, hd, 2) / hd)
        rot = np.exp(1j * pos * freqs)
        if cfg.rope_interleaved:
            z = (x[0::2] + 1j * x[1::2]) * rot
            out = np.empty(hd)
            out[0::2], out[1::2] = z.real, z.imag
            return out
        z = (x[: hd // 2] + 1j * x[hd // 2:]) * rot
        return np.concatenate([z.real, z.imag])

    def silu(x):
        return x / (1 + np.exp(-x))

    def mlp(x, g, u, d):
        return d @ (silu(g @ x) * (u @ x))

    x = W["token_embd"][tokens]
    for i in range(cfg.n_layers):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm"])
        q = h @ W[p + "attn_q"].T
        k = h @ W[p + "attn_k"].T
        v = h @ W[p + "attn_v"].T
        if cfg.qkv_bias:
            q, k, v = q + W[p + "attn_q.bias"], k + W[p + "attn_k.bias"], v + W[p + "attn_v.bias"]
        att = np.zeros((T, H * hd))
        for head in range(H):
            kvh = head // (H // KV)
            qs = np.array([rope(q[t, head * hd:(head + 1) * hd], t) for t in range(T)])
            ks = np.array([rope(k[t, kvh * hd:(kvh + 1) * hd], t) for t in range(T)])
            vs = v[:, kvh * hd:(kvh + 1) * hd]
            for t in range(T):
                s = ks[: t + 1] @ qs[t] / np.sqrt(hd)
                e = np.exp(s - s.max())
                att[t, head * hd:(head + 1) * hd] = (e / e.sum()) @ vs[: t + 1]
        x = x + att @ W[p + "attn_output"].T
        h = rms(x, W[p + "ffn_norm"])
        if cfg.is_moe_layer(i):
            out = np.zeros_like(h)
            for t in range(T):
                logits = W[p + "ffn_gate_inp"] @ h[t]
                pr = np.exp(logits - logits.max())
                pr /= pr.sum()
                top = np.argsort(-pr)[: cfg.n_active_experts]
                for e in top:
                    out[t] += pr[e] / pr[top].sum() * mlp(h[t], W[p + "ffn_gate_exps"][e],
                                                          W[p + "ffn_up_exps"][e], W[p + "ffn_down_exps"][e])
            x = x + out
        else:
            x = x + np.array([mlp(h[t], W[p + "ffn_gate"], W[p + "ffn_up"], W[p + "ffn_down"]) for t in range(T)])
    head = W["token_embd"] if cfg.tied_embeddings else W["output"]
    return rms(x, W["output_norm"]) @ head.T


def _check(cfg, prefill=5, decode=4, seed=0):
    w = random_weights(cfg, torch.float32, seed=seed, std=0.2)
    for k in w:  # non-trivial norm weights so they are really applied
        if k.endswith("norm"):
            w[k] = w[k] + 0.1 * torch.arange(w[k].numel()) / w[k].numel()
    ref_w = {k: v.clone() for k, v in w.items()}
    tokens = torch.randint(0, cfg.vocab_size, (prefill + decode,), generator=torch.Generator().manual_seed(seed))
    expected = np_forward(cfg, ref_w, tokens.numpy())
    model = Decoder(cfg, w, max_seq=32)
    got = [model(tokens[None, :prefill], 0)[0].numpy()]
    for t in range(prefill, prefill + decode):
        got.append(model(tokens[None, t:t + 1], t)[0].numpy())
    want = expected[prefill - 1:]
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


BASE = dict(n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, head_dim=8, d_ff=48, vocab_size=50, rope_theta=10000.0)


def test_dense_gqa_untied_matches_numpy():
    _check(DecoderConfig(**BASE))


def test_tied_qkv_bias_interleaved_rope_matches_numpy():
    _check(DecoderConfig(**BASE, tied_embeddings=True, qkv_bias=True, rope_interleaved=True), seed=1)


def test_moe_top2_matches_numpy():
    _check(DecoderConfig(**{**BASE, "d_ff": 0}, n_experts=4, n_active_experts=2, d_ff_expert=16), seed=2)


def test_batched_decode_rows_are_independent():
    cfg = DecoderConfig(**BASE)
    w = random_weights(cfg, torch.float32, std=0.2)
    single = Decoder(cfg, {k: v.clone() for k, v in w.items()}, max_seq=16)
    batched = Decoder(cfg, w, max_seq=16, max_batch=2)
    toks = torch.tensor([[1, 2, 3], [4, 5, 6]])
    out_b = batched(toks, 0)
    out_1 = single(toks[1:], 0)
    np.testing.assert_allclose(out_b[1].numpy(), out_1[0].numpy(), rtol=1e-5, atol=1e-5)


def test_bytes_read_per_token_counts_every_weight_once():
    # by hand for BASE (fp32): layer = q 32*32 + k,v 2*16*32 + o 32*32 + gate/up/down 3*48*32 + 2 norms*32
    cfg = DecoderConfig(**BASE)
    model = Decoder(cfg, random_weights(cfg, torch.float32), max_seq=16)
    layer = 32 * 32 + 2 * 16 * 32 + 32 * 32 + 3 * 48 * 32 + 2 * 32
    expected = 4 * (2 * layer + 32 + 32 + 50 * 32)  # layers, one embedding row, final norm, lm head
    assert model.weight_bytes_per_token() == expected
    # KV at depth 10: K and V, 2 layers, 16 values each, 11 positions (10 cached + the new one), 4 bytes
    assert model.kv_bytes_per_token(10) == 2 * 2 * 16 * 11 * 4


def test_stage_timer_sees_every_stage():
    cfg = DecoderConfig(**BASE)
    model = Decoder(cfg, random_weights(cfg, torch.float32), max_seq=16)
    timer = StageTimer()
    model(torch.tensor([[1]]), 0, timer)
    assert set(timer.seconds) == {"embedding", "attention", "ffn", "lm_head"}
    assert all(s > 0 for s in timer.seconds.values())


def test_sequence_longer_than_cache_is_a_user_error():
    cfg = DecoderConfig(**BASE)
    model = Decoder(cfg, random_weights(cfg, torch.float32), max_seq=4)
    with pytest.raises(UserError):
        model(torch.tensor([[1, 2, 3]]), 2)
