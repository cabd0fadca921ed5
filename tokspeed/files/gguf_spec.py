"""ModelSpec from a GGUF file: llama.cpp's ``{arch}.*`` hyper-parameters plus what the tensors show.

Keys follow gguf-py's ``Keys`` (``{arch}.block_count``, ``{arch}.embedding_length``, ...). Where the
metadata is silent the tensor list decides: vocabulary = rows of ``token_embd`` (what the bytes
depend on), tied embeddings = no ``output.weight``, biases / q-k norms / gated MLP = presence of
those tensors in block 0, expert widths = shapes of the expert stacks.
"""

from __future__ import annotations

import math
import re

from ..errors import UserError
from ..models.spec import ModelSpec
from .gguf_reader import GGUFFile

_BLK = re.compile(r"^blk\.(\d+)\.(.+?)(?:\.(weight|bias))?$")


def _count(x, key: str) -> int:
    """A count or size stored in the file: a finite whole number (FLOAT32 ``inf``/``NaN``/``2.5`` refused)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise UserError(f"GGUF metadata {key} = {x!r} should be a whole number")
    if isinstance(x, float):
        if not math.isfinite(x) or not x.is_integer():
            raise UserError(f"GGUF metadata {key} = {x!r} should be a whole number",
                            "the file is damaged or was written by a broken converter")
        x = int(x)
    return x


def _scalar(v, key: str, pick=max, integer: bool = True):
    """Per-layer arrays (OpenELM head counts, ...) collapse to one number; counts must be whole numbers."""
    if v is None:
        return None
    if hasattr(v, "values"):
        v = v.values()
    if isinstance(v, list):
        nums = [x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool) and x]
        nums = [_count(x, key) for x in nums] if integer else nums
        return pick(nums) if nums else 0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UserError(f"GGUF metadata {key} = {v!r} should be a number")
    if integer:
        return _count(v, key)
    if not math.isfinite(v):
        raise UserError(f"GGUF metadata {key} = {v!r} should be a finite number")
    return v


class _View:
    """The file as spec_from_gguf reads it: its ``{arch}.*`` keys (per-layer arrays collapsed) and its tensors
    by name, with block 0's by (role, weight|bias)."""

    def __init__(self, g: GGUFFile):
        self.g, self.arch = g, g.arch
        self.by_name = {t.name: t for t in g.tensors}
        self.blk0: dict = {}
        self.layers: set = set()
        for t in g.tensors:
            m = _BLK.match(t.name)
            if m:
                self.layers.add(int(m.group(1)))
                if m.group(1) == "0":
                    self.blk0[(m.group(2), m.group(3) or "weight")] = t

    def key(self, k, default=None, pick=max, integer=True):
        v = _scalar(self.g.arch_get(k), f"{self.arch}.{k}", pick, integer)
        return default if v is None else v

    def has0(self, base, suffix="weight") -> bool:
        return (base, suffix) in self.blk0

    def any_tensor(self, *endings) -> bool:
        return any(t.name.endswith(endings) for t in self.g.tensors)


def _shape(v: _View) -> tuple[int, int, int]:
    """(layers, width, heads): the three every language model file states."""
    g, key = v.g, v.key
    n_layers = int(key("block_count", len(v.layers)))
    embd = v.by_name.get("token_embd.weight")
    d_model = int(key("embedding_length", embd.cols if embd else 0))
    n_heads = int(key("attention.head_count", 0))
    if not (n_layers and d_model and n_heads):
        missing = [k for k, x in (("block_count", n_layers), ("embedding_length", d_model),
                                  ("attention.head_count", n_heads)) if not x]
        raise UserError(f"{g.path}: GGUF metadata lacks {', '.join(f'{v.arch}.{k}' for k in missing)}",
                        "not a language model file? (a vision projector or an embedding-only file)")
    return n_layers, d_model, n_heads


def _ffn(v: _View, n_layers: int) -> dict:
    """The MLP and the experts: widths, gating, shared experts, leading dense layers."""
    key, by_name, layers = v.key, v.by_name, v.layers
    n_experts = int(key("expert_count", 0))
    exps = by_name.get("blk.%d.ffn_up_exps.weight" % max(layers)) if layers else None
    d_ff_expert = int(key("expert_feed_forward_length", 0)) or (exps.shape[-2] if exps else 0)
    d_ff = int(key("feed_forward_length", 0))
    if not d_ff and "blk.0.ffn_down.weight" in by_name:
        d_ff = by_name["blk.0.ffn_down.weight"].cols
    gated = v.has0("ffn_gate") or v.has0("ffn_gate_exps") or v.has0("ffn_gate_up_exps")
    up = v.blk0.get(("ffn_up", "weight"))
    if not gated and up is not None and d_ff and up.rows == 2 * d_ff:     # Phi-3: gate and up fused
        gated = True
    shexp = next((t for t in v.g.tensors if t.name.endswith("ffn_up_shexp.weight")), None)
    n_shared = int(key("expert_shared_count", 1 if shexp else 0)) if n_experts else 0
    d_ff_shared = 0
    if shexp is not None and n_shared:
        d_ff_shared = shexp.rows // n_shared
    elif n_shared:
        d_ff_shared = int(key("expert_shared_feed_forward_length", 0))
    n_dense = int(key("leading_dense_block_count", 0)) if n_experts else 0
    if n_experts and not n_dense:
        while n_dense < n_layers and f"blk.{n_dense}.ffn_gate_inp.weight" not in by_name \
                and f"blk.{n_dense}.ffn_up.weight" in by_name:
            n_dense += 1
    return dict(d_ff=d_ff if (not n_experts or n_dense) else 0, gated_mlp=gated, n_experts=n_experts,
                n_active_experts=int(key("expert_used_count", 0)) if n_experts else 0,
                n_shared_experts=n_shared, d_ff_expert=d_ff_expert if n_experts else 0, d_ff_shared=d_ff_shared,
                n_dense_layers=n_dense)


def _attention(v: _View, n_layers: int, n_heads: int) -> dict:
    """Heads, head width, MLA ranks, sliding-window layers and a second (global) attention shape."""
    key, arch = v.key, v.arch
    n_kv = int(key("attention.head_count_kv", n_heads) or n_heads)
    mla = {}
    kv_lora = int(key("attention.kv_lora_rank", 0))
    if kv_lora:
        rope = int(key("rope.dimension_count", 0))
        k_len = int(key("attention.key_length_mla", 0) or key("attention.key_length", 0))
        v_len = int(key("attention.value_length_mla", 0) or key("attention.value_length", 0))
        mla = dict(kv_lora_rank=kv_lora, q_lora_rank=int(key("attention.q_lora_rank", 0)),
                   qk_rope_head_dim=rope, qk_nope_head_dim=k_len - rope, v_head_dim=v_len)
    head_dim = 0 if kv_lora else int(key("attention.key_length", 0))
    sliding = int(key("attention.sliding_window", 0))
    n_sliding = 0
    if sliding and arch == "gemma2":
        n_sliding = n_layers // 2                       # every other layer (llama.cpp gemma2)
    elif sliding and arch == "gemma3":
        n_sliding = n_layers - n_layers // 6            # 5 local : 1 global
    elif sliding and arch == "gemma3n":
        n_sliding = n_layers - n_layers // 5            # load_swa_pattern(ml, 5): 4 local : 1 global
    glob = {} if kv_lora else _global_shape(v.g.path, v.by_name, n_layers, n_heads)
    if glob:
        if not sliding:
            raise UserError(f"{v.g.path}: layers of two attention shapes but no {arch}.attention.sliding_window",
                            "tokspeed reads such files as sliding-window layers plus full-attention layers (Gemma 4)")
        head_dim, n_kv, n_sliding = glob.pop("head_dim"), glob.pop("n_kv_heads"), glob.pop("n_sliding_layers")
    return dict(n_kv_heads=n_kv, head_dim=head_dim, sliding_window=sliding if n_sliding else 0,
                n_sliding_layers=n_sliding, **mla, **glob)


def spec_from_gguf(g: GGUFFile, id: str = "") -> ModelSpec:
    v = _View(g)
    n_layers, d_model, n_heads = _shape(v)
    embd = v.by_name.get("token_embd.weight")
    tokens = g.get("tokenizer.ggml.tokens")
    vocab = embd.rows if embd else int(v.key("vocab_size", len(tokens) if tokens is not None else 0))
    norm_names = [b for (b, s) in v.blk0 if "norm" in b and s == "weight"
                  and b not in ("attn_q_norm", "attn_k_norm", "attn_q_a_norm", "attn_kv_a_norm",
                                "post_norm", "altup_router_norm", "laurel_post_norm")]   # Gemma 3n's: per_layer_stream_tensors
    has0 = v.has0
    name = str(g.get("general.name", "") or "")
    return ModelSpec(
        id=id or name or g.path.stem,
        name=name,
        family=v.arch,
        n_layers=n_layers, d_model=d_model, n_heads=n_heads,
        vocab_size=vocab,
        tied_embeddings="output.weight" not in v.by_name,
        norm="layernorm" if has0("attn_norm", "bias") else "rmsnorm",
        norms_per_layer=max(1, len(norm_names)),
        qkv_bias=has0("attn_q", "bias") or has0("attn_qkv", "bias"),
        o_bias=has0("attn_output", "bias"),
        mlp_bias=has0("ffn_up", "bias") or has0("ffn_down", "bias"),
        lm_head_bias="output.bias" in v.by_name,
        qk_norm=has0("attn_q_norm"),
        attn_sinks=has0("attn_sinks") or has0("attn_sinks", "bias"),
        rope_theta=float(v.key("rope.freq_base", 10000.0, integer=False)),
        max_context=int(v.key("context_length", 4096)),
        router_bias=v.any_tensor("exp_probs_b.bias", "ffn_gate_inp.bias"),
        expert_bias=has0("ffn_up_exps", "bias") or v.any_tensor("ffn_up_exps.bias"),
        shared_expert_gate=v.any_tensor("ffn_gate_inp_shexp.weight"),
        source=str(g.path),
        **_ffn(v, n_layers), **_attention(v, n_layers, n_heads), **_per_layer_streams(v, n_layers),
    )


# llama.cpp src/models/gemma3n.cpp and models.h fix these for the gemma3n architecture (no metadata key):
GEMMA3N_KV_LAYERS = 20          # hparams.n_layer_kv_from_start: layers from the 20th on reuse an earlier cache
GEMMA3N_SPARSE_LAYERS = 10      # n_layer_sparsity: the first 10 layers' FFN gates keep their top activations


def _per_layer_streams(v: _View, n_layers: int) -> dict:
    """Gemma 3n's per-layer inputs, AltUp and LAuReL, from the tensors' shapes (``per_layer_token_embd``: table rows x
    n_layers * width; ``altup_router``: streams; ``laurel_l``: rank); {} for a file without them."""
    table = v.by_name.get("per_layer_token_embd.weight")
    router, laurel = v.blk0.get(("altup_router", "weight")), v.blk0.get(("laurel_l", "weight"))
    if table is None:
        return {}
    if router is None or laurel is None or table.cols % n_layers:
        raise UserError(f"{v.g.path}: a per-layer input table without AltUp / LAuReL tensors, or not "
                        f"{n_layers} layers wide", "tokspeed reads Gemma 3n's layout (src/models/gemma3n.cpp)")
    shared = int(v.key("attention.shared_kv_layers", max(0, n_layers - GEMMA3N_KV_LAYERS)))
    return dict(ple_dim=table.cols // n_layers, ple_vocab=table.rows, altup_inputs=router.rows,
                laurel_rank=laurel.rows, kv_shared_layers=shared, sparse_ffn_layers=min(n_layers, GEMMA3N_SPARSE_LAYERS))


def _global_shape(path, by_name, n_layers: int, n_heads: int) -> dict:
    """Full-attention layers with their own head shape, seen in the tensors (Gemma 4): layers whose q projection
    is wider than layer 0's, or that have no v projection (K = V). Empty when every layer has one shape."""
    def rows(i, role):
        t = by_name.get(f"blk.{i}.{role}.weight")
        return t.rows if t is not None else 0

    q0, k0 = rows(0, "attn_q"), rows(0, "attn_k")
    if not (q0 and k0 and rows(0, "attn_v")):
        return {}
    # the layers the file holds (a block count is read from metadata and may be any number: never loop over it)
    held = sorted({int(n.split(".")[1]) for n in by_name if n.startswith("blk.") and n.split(".")[1].isdigit()})
    full = [i for i in held if i < n_layers and rows(i, "attn_q") and (rows(i, "attn_q") != q0 or not rows(i, "attn_v"))]
    if not full:
        return {}
    j = full[0]
    hd, ghd = q0 // n_heads, rows(j, "attn_q") // n_heads
    if not (hd and ghd and q0 == hd * n_heads and rows(j, "attn_q") == ghd * n_heads
            and k0 % hd == 0 and rows(j, "attn_k") and rows(j, "attn_k") % ghd == 0):
        raise UserError(f"{path}: the attention tensors of layers 0 and {j} do not split into {n_heads} heads",
                        "the file is damaged or its head count is wrong")
    out = dict(head_dim=hd, n_kv_heads=k0 // hd, n_sliding_layers=n_layers - len(full), global_head_dim=ghd,
               global_kv_heads=rows(j, "attn_k") // ghd, global_kv_shared=not rows(j, "attn_v"))
    if n_layers > len(held):
        raise UserError(f"{path}: {n_layers:,} layers in the metadata but {len(held):,} in the tensors",
                        "the file is damaged or its block count is wrong")
    F = len(full)
    spread = [i for i in range(n_layers) if (i + 1) * F // n_layers != i * F // n_layers]
    same = all((rows(i, "attn_q"), rows(i, "attn_k"), rows(i, "attn_v")) == (rows(j, "attn_q"), rows(j, "attn_k"),
                                                                             rows(j, "attn_v")) for i in full)
    if full != spread or not same:
        raise UserError(f"{path}: full-attention layers {full[:8]} of another head shape, not evenly spread "
                        "(or not all alike) are not modelled", "tokspeed reads Gemma 4's every-n-th layout")
    return out
