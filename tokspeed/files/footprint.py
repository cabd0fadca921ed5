"""Resident vs read: per component, the bytes a file keeps in memory and the bytes one decoded token reads.

Per decoded token (batch 1): the embedding lookup reads ONE row of ``token_embd``; attention, dense
FFN, shared experts, router and norms are read whole; routed experts only in the share
``n_active_experts / n_experts`` (the experts a token visits); the LM head is read whole (a tied
model reads the embedding table again as its LM head); vision/audio encoders are resident but not
read while decoding text. The KV cache adds ``kv_bytes_per_context_token`` for every token already
in context (K and V, or MLA's latent, in the KV dtype; f16 = 2 bytes by default).
"""

from __future__ import annotations

import os

from ..quant.kv import kv_bytes
from .classify import COMPONENTS
from .model_file import ModelFile



def footprint(mf: ModelFile, kv_dtype: str = "f16") -> dict:
    spec, storage = mf.spec, mf.storage
    comps = {c: {"resident_bytes": 0, "read_bytes_per_token": 0.0, "tensors": 0} for c in COMPONENTS}
    share = spec.n_active_experts / spec.n_experts if spec.is_moe else 1.0
    params = 0
    embd_bytes = 0
    for e in storage.entries:
        t, c = e.tensor, comps[e.part.component]
        c["resident_bytes"] += t.n_bytes
        c["tensors"] += 1
        params += e.elements
        comp = e.part.component
        if comp == "embedding" and e.part.role in ("token_embd", "per_layer_token_embd"):
            embd_bytes += t.n_bytes if e.part.role == "token_embd" else 0
            c["read_bytes_per_token"] += t.n_bytes / max(1, t.rows)      # one row of (vocab, d_model)
        elif comp == "experts":
            c["read_bytes_per_token"] += t.n_bytes * share
        elif comp != "vision":
            c["read_bytes_per_token"] += t.n_bytes
    tied = not storage.has("output")
    if tied:
        comps["lm_head"]["read_bytes_per_token"] += embd_bytes
    kv_el = kv_bytes(kv_dtype)
    kv_per_token = (spec.kv_cached_elements(1) if spec.has_global_shape or spec.kv_shared_layers
                    else spec.n_layers * spec.kv_elements_per_token_layer) * kv_el + spec.index_cache_bytes(1)
    comps = {k: v for k, v in comps.items() if v["tensors"] or v["read_bytes_per_token"]}
    return {
        "model": spec.id,
        "file": str(mf.path),
        "format": mf.kind,
        "architecture": spec.family,
        "quant": mf.quant,
        "tied_embeddings": tied,
        "params": params,
        "shape": {"n_layers": spec.n_layers, "d_model": spec.d_model, "n_heads": spec.n_heads,
                  "n_kv_heads": spec.n_kv_heads, "head_dim": spec.head_dim, "d_ff": spec.d_ff,
                  "vocab_size": spec.vocab_size, "n_experts": spec.n_experts, "d_ff_expert": spec.d_ff_expert,
                  "n_active_experts": spec.n_active_experts, "max_context": spec.max_context},
        "tensor_types": storage.type_counts(),
        "components": comps,
        "kv_dtype": kv_dtype,
        "kv_bytes_per_context_token": kv_per_token,
        "file_bytes": _file_bytes(storage),
        "totals": {
            "resident_bytes": sum(v["resident_bytes"] for v in comps.values()),
            "read_bytes_per_token": sum(v["read_bytes_per_token"] for v in comps.values()),
            "tensors": len(storage.entries),
        },
    }


def _file_bytes(storage) -> int:
    """Size on disk of the files the tensors live in (headers and alignment padding included)."""
    files = {e.tensor.file for e in storage.entries if e.tensor.file}
    return sum(os.path.getsize(f) for f in files if os.path.isfile(f))
