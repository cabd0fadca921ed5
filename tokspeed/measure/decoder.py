"""The reference decoder: a compact Llama-family transformer in torch (gpt-fast style).

RMSNorm, rotary embeddings (half-split "neox" or interleaved pairs), grouped-query attention over a
preallocated KV cache, SwiGLU FFN or a top-k mixture of experts (with optional shared experts),
tied or separate LM head. Q/K/V and gate/up are fused into one weight each, so one decode step is a
handful of large matrix-vector products: the weights are streamed from memory once per token.

Weights come from a dict keyed by GGUF tensor roles (``weights.py`` builds it from random values,
a safetensors folder or a GGUF file). Only the last position's logits are computed, as engines do.
A ``StageTimer`` passed to ``forward`` times embedding / attention / FFN / LM head separately.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UserError


@dataclass(frozen=True)
class DecoderConfig:
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tied_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    rope_interleaved: bool = False   # GGUF "llama" arch stores Q/K for adjacent-pair rotation
    n_experts: int = 0
    n_active_experts: int = 0
    d_ff_expert: int = 0
    n_shared_experts: int = 0
    shared_expert_gate: bool = False   # Qwen2-MoE: shared expert output scaled by sigmoid(x . g)
    d_ff_shared: int = 0
    n_dense_layers: int = 0

    @classmethod
    def from_spec(cls, spec, **over) -> "DecoderConfig":
        """From a ModelSpec; refuses shapes this decoder does not implement."""
        unsupported = [name for name, on in (
            ("multi-head latent attention", spec.is_mla), ("layernorm", spec.norm != "rmsnorm"),
            ("parallel blocks", spec.parallel_block), ("non-gated MLP", not spec.gated_mlp),
            ("partial rotary", spec.rotary_dim not in (0, spec.head_dim)), ("attention sinks", spec.attn_sinks),
            ("o/mlp/lm-head biases", spec.o_bias or spec.mlp_bias or spec.lm_head_bias),
            ("sliding-window layers", spec.n_sliding_layers > 0), ("sandwich norms", spec.norms_per_layer != 2)) if on]
        if unsupported:
            raise UserError(f"the reference decoder does not implement {', '.join(unsupported)} ({spec.id})",
                            "use backend='llama.cpp' with a GGUF file")
        kw = dict(n_layers=spec.n_layers, d_model=spec.d_model, n_heads=spec.n_heads, n_kv_heads=spec.n_kv_heads,
                  head_dim=spec.head_dim, d_ff=spec.d_ff, vocab_size=spec.vocab_size, rope_theta=spec.rope_theta,
                  tied_embeddings=spec.tied_embeddings, qkv_bias=spec.qkv_bias, qk_norm=spec.qk_norm,
                  n_experts=spec.n_experts, n_active_experts=spec.n_active_experts, d_ff_expert=spec.d_ff_expert,
                  n_shared_experts=spec.n_shared_experts, d_ff_shared=spec.d_ff_shared or spec.d_ff_expert,
                  shared_expert_gate=spec.shared_expert_gate,
                  n_dense_layers=spec.n_dense_layers)
        kw.update(over)
        return cls(**kw)

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    def is_moe_layer(self, i: int) -> bool:
        return self.n_experts > 0 and i >= self.n_dense_layers


class StageTimer:
    """Accumulates wall time per stage; synchronizes the device around each stage so that
    asynchronous CUDA work is charged to the stage that queued it."""

    def __init__(self, device: str = "cpu"):
        self.seconds: dict[str, float] = {}
        self._sync = torch.cuda.synchronize if str(device).startswith("cuda") else None

    def stage(self, name: str):
        return _Stage(self, name)


class _Stage:
    def __init__(self, timer, name):
        self.timer, self.name = timer, name

    def __enter__(self):
        if self.timer._sync:
            self.timer._sync()
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        if self.timer._sync:
            self.timer._sync()
        self.timer.seconds[self.name] = self.timer.seconds.get(self.name, 0.0) + time.perf_counter() - self.t0


class _NoTimer:
    _null = nullcontext()

    def stage(self, name):
        return self._null


def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_tables(cfg: DecoderConfig, max_seq: int, device):
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim))
    ang = torch.outer(torch.arange(max_seq, dtype=torch.float64), inv)
    return ang.cos().float().to(device), ang.sin().float().to(device)


def apply_rope(x, cos, sin, interleaved: bool):
    """x [B, H, T, hd]; cos/sin [T, hd/2]. Rotates pairs (i, i + hd/2), or (2i, 2i+1) if interleaved."""
    xf = x.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2).to(x.dtype)
    a, b = xf.chunk(2, -1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), -1).to(x.dtype)


class Decoder(nn.Module):
    def __init__(self, cfg: DecoderConfig, weights: dict, max_seq: int, max_batch: int = 1,
                 dtype=torch.float32, device="cpu"):
        """``weights``: GGUF role name -> tensor (``token_embd``, ``output_norm``, ``output``,
        ``blk.{i}.attn_q`` ...); they are fused, cast to ``dtype`` and moved to ``device`` here, and
        popped from the dict as they are used so a large model is never held twice."""
        super().__init__()
        self.cfg, self.dtype, self.device, self.max_seq = cfg, dtype, torch.device(device), max_seq
        self._timer = _NoTimer()
        # On CPU, weights are prepacked for oneDNN's matmul (the path torch.compile's CPU freezing
        # uses): its matrix-vector product streams fp32 weights ~1.5-2x faster than F.linear's MKL
        # gemv on this project's 2-core EPYC (benchmarks/RESULTS.md). Elsewhere, plain F.linear.
        self.packed = self.device.type == "cpu" and _onednn_available(dtype)
        lay = _pack if self.packed else (lambda t: t)

        def w(name, required=True):
            t = weights.pop(name, None)
            if t is None and required:
                raise UserError(f"weights lack tensor {name!r}")
            return None if t is None else t.to(device=device, dtype=dtype).contiguous()

        def cat(*names):
            return torch.cat([weights.pop(n).to(device=device, dtype=dtype) for n in names], 0).contiguous()

        self.tok_emb = w("token_embd")
        self.out_norm = w("output_norm")
        self.lm_head = lay(self.tok_emb if cfg.tied_embeddings else w("output"))
        self.layers = []
        for i in range(cfg.n_layers):
            p = f"blk.{i}."
            L = {"attn_norm": w(p + "attn_norm"), "ffn_norm": w(p + "ffn_norm"),
                 "wqkv": lay(cat(p + "attn_q", p + "attn_k", p + "attn_v")), "wo": lay(w(p + "attn_output"))}
            if cfg.qkv_bias:
                L["bqkv"] = cat(p + "attn_q.bias", p + "attn_k.bias", p + "attn_v.bias")
            if cfg.qk_norm:
                L["q_norm"], L["k_norm"] = w(p + "attn_q_norm"), w(p + "attn_k_norm")
            if cfg.is_moe_layer(i):
                L["router"] = lay(w(p + "ffn_gate_inp"))
                w13e = torch.cat([weights.pop(p + n).to(device=device, dtype=dtype)
                                  for n in ("ffn_gate_exps", "ffn_up_exps")], 1)  # [E, 2f, d]
                L["w13e"] = [lay(e.contiguous()) for e in w13e]
                L["w2e"] = [lay(e.contiguous()) for e in w(p + "ffn_down_exps")]  # E x [d, f]
                if cfg.n_shared_experts:
                    L["w13s"] = lay(cat(p + "ffn_gate_shexp", p + "ffn_up_shexp"))
                    L["w2s"] = lay(w(p + "ffn_down_shexp"))
                    if cfg.shared_expert_gate:
                        L["gs"] = lay(w(p + "ffn_gate_inp_shexp"))           # [1, d]
            else:
                L["w13"] = lay(cat(p + "ffn_gate", p + "ffn_up"))
                L["w2"] = lay(w(p + "ffn_down"))
            self.layers.append(L)
        self.cos, self.sin = rope_tables(cfg, max_seq, device)
        shape = (cfg.n_layers, max_batch, cfg.n_kv_heads, max_seq, cfg.head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)

    # ---- what one step reads ----------------------------------------------------------------
    def weight_bytes_per_token(self) -> int:
        """Bytes of weights one decode step reads: every layer weight (the active experts only),
        one embedding row, the final norm and the LM head."""
        c = self.cfg
        total = self.tok_emb[0].numel() * self.tok_emb.element_size() + _nbytes(self.out_norm) + _nbytes(self.lm_head)
        for i, L in enumerate(self.layers):
            for k, t in L.items():
                if k in ("w13e", "w2e"):  # one expert's share, times the experts a token visits
                    total += _nbytes(t[0]) * c.n_active_experts
                else:
                    total += _nbytes(t)
        return total

    def flops_per_token(self, context: int) -> int:
        """Multiply-adds x 2 of one decode step per sequence: every weight matrix it uses (the
        active experts only) and attention's q.K and p.V over ``context`` + 1 positions."""
        c = self.cfg
        mats = _numel(self.lm_head)
        for L in self.layers:
            for k, t in L.items():
                if k in ("w13e", "w2e"):
                    mats += _numel(t[0]) * c.n_active_experts
                elif k in ("wqkv", "wo", "w13", "w2", "w13s", "w2s", "router", "gs"):
                    mats += _numel(t)
        return 2 * mats + 4 * c.n_layers * c.n_heads * c.head_dim * (context + 1)

    def kv_bytes_per_token(self, context: int, batch: int = 1) -> int:
        """KV cache bytes one decode step reads at ``context`` cached tokens (K and V, every layer),
        plus the one new K/V row it writes."""
        c = self.cfg
        return 2 * c.n_layers * batch * c.kv_dim * (context + 1) * self.k_cache.element_size()

    # ---- forward --------------------------------------------------------------------------
    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, start: int, timer: StageTimer | None = None) -> torch.Tensor:
        """tokens [B, T] at positions start..start+T-1 -> logits [B, vocab] of the last position (fp32)."""
        tm = timer or self._timer
        B, T = tokens.shape
        if start + T > self.max_seq:
            raise UserError(f"sequence of {start + T} tokens exceeds the KV cache ({self.max_seq})")
        with tm.stage("embedding"):
            x = F.embedding(tokens, self.tok_emb)
        cos, sin = self.cos[start:start + T], self.sin[start:start + T]
        mask = None
        if T > 1:
            qpos = torch.arange(start, start + T, device=self.device)[:, None]
            mask = torch.arange(start + T, device=self.device)[None, :] <= qpos
        for i, L in enumerate(self.layers):
            with tm.stage("attention"):
                x = x + self._attention(i, L, rms_norm(x, L["attn_norm"], self.cfg.norm_eps), start, cos, sin, mask)
            with tm.stage("ffn"):
                h = rms_norm(x, L["ffn_norm"], self.cfg.norm_eps)
                x = x + (self._moe(L, h) if "router" in L else self._swiglu(h, L["w13"], L["w2"]))
        with tm.stage("lm_head"):
            x = rms_norm(x[:, -1], self.out_norm, self.cfg.norm_eps)
            return self._mm(x, self.lm_head).float()

    def _attention(self, i, L, h, start, cos, sin, mask):
        c = self.cfg
        B, T, _ = h.shape
        qkv = self._mm(h, L["wqkv"], L.get("bqkv"))
        q, k, v = qkv.split((c.q_dim, c.kv_dim, c.kv_dim), -1)
        q = q.view(B, T, c.n_heads, c.head_dim).transpose(1, 2)
        k = k.view(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
        v = v.view(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
        if c.qk_norm:
            q, k = rms_norm(q, L["q_norm"], c.norm_eps), rms_norm(k, L["k_norm"], c.norm_eps)
        q, k = apply_rope(q, cos, sin, c.rope_interleaved), apply_rope(k, cos, sin, c.rope_interleaved)
        end = start + T
        self.k_cache[i, :B, :, start:end] = k
        self.v_cache[i, :B, :, start:end] = v
        keys, vals = self.k_cache[i, :B, :, :end], self.v_cache[i, :B, :, :end]
        o = F.scaled_dot_product_attention(q, keys, vals, attn_mask=mask, enable_gqa=c.n_heads != c.n_kv_heads)
        return self._mm(o.transpose(1, 2).reshape(B, T, c.q_dim), L["wo"])

    def _moe(self, L, h):
        """Top-k routing: softmax over the router logits, keep the k largest, renormalize; each
        selected expert runs only on its tokens (decode reads k experts, not all)."""
        c = self.cfg
        B, T, d = h.shape
        flat = h.reshape(-1, d)
        probs = self._mm(flat, L["router"]).float().softmax(-1)
        weight, idx = probs.topk(c.n_active_experts, -1)
        weight = (weight / weight.sum(-1, keepdim=True)).to(h.dtype)
        out = torch.zeros_like(flat)
        for e in idx.unique().tolist():
            rows, slot = (idx == e).nonzero(as_tuple=True)
            y = self._swiglu(flat[rows], L["w13e"][e], L["w2e"][e])
            out.index_add_(0, rows, y * weight[rows, slot, None])
        if "w13s" in L:
            shared = self._swiglu(flat, L["w13s"], L["w2s"])
            if "gs" in L:
                shared = shared * torch.sigmoid(self._mm(flat, L["gs"]))
            out = out + shared
        return out.view(B, T, d)

    def _mm(self, x, w, bias=None):
        """x [..., in] times a weight in this model's layout; 2-D so every path hits the BLAS gemv."""
        x2 = x.reshape(-1, x.shape[-1])
        y = torch.ops.mkldnn._linear_pointwise(x2, w, bias, "none", [], "") if self.packed else F.linear(x2, w, bias)
        return y.view(*x.shape[:-1], y.shape[-1])

    def _swiglu(self, h, w13, w2):
        g, u = self._mm(h, w13).chunk(2, -1)
        return self._mm(F.silu(g) * u, w2)


def _pack(w):
    """A 2-D weight [out, in] reordered into oneDNN's blocked layout for batch-1 products."""
    return torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), 1)


def _onednn_available(dtype) -> bool:
    """Whether this torch build can prepack and run oneDNN linear for ``dtype`` here."""
    try:
        w = _pack(torch.ones(8, 8, dtype=dtype))
        y = torch.ops.mkldnn._linear_pointwise(torch.ones(1, 8, dtype=dtype), w, None, "none", [], "")
        return bool(float(y[0, 0]) == 8.0)
    except (RuntimeError, AttributeError, NotImplementedError):
        return False


def _nbytes(t) -> int:
    return 0 if t is None else t.numel() * t.element_size()


def _numel(t) -> int:
    return 0 if t is None else t.numel()

