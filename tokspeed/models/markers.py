"""The short markers of a model's architecture that the catalog's tables and search show: MoE layout, MLA, sliding
windows, full layers of their own shape, sparse-indexed attention, tied embeddings, parallel block, vision tower, hybrid
layers, chunked attention, Gemma 3n's per-layer inputs and shared KV."""

from __future__ import annotations


def markers(m) -> list[str]:
    """Short architecture markers: MoE layout, MLA, sliding windows, tied embeddings, parallel block."""
    out = []
    if m.is_moe:
        shared = f"+{m.n_shared_experts}s" if m.n_shared_experts else ""
        out.append(f"MoE {m.n_active_experts}/{m.n_experts}{shared}")
    if m.is_mla:
        out.append("MLA")
    if m.n_sliding_layers and not m.chunked_attention:
        out.append(f"SWA {m.sliding_window} x{m.n_sliding_layers}")
    if m.has_global_shape:
        out.append(f"global {m.full_kv_heads}x{m.full_head_dim}" + (" K=V" if m.global_kv_shared else ""))
    if m.index_topk:
        out.append(f"sparse top-{m.index_topk}")
    if m.tied_embeddings:
        out.append("tied")
    if m.parallel_block:
        out.append("parallel")
    if m.vision_params:
        out.append("+vision")
    if m.n_linear_layers:
        out.append(f"hybrid {m.linear_kind} x{m.n_linear_layers}")
    if m.chunked_attention:
        out.append(f"chunked {m.sliding_window} x{m.n_sliding_layers}")
    if m.has_per_layer_streams:
        out.append(f"per-layer inputs {m.ple_dim}, AltUp x{m.altup_inputs}, LAuReL {m.laurel_rank}")
    if m.kv_shared_layers:
        out.append(f"KV shared x{m.kv_shared_layers}")
    return out
