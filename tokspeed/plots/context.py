"""Decode tok/s against context length: the seeds' table as a chart, with the weights-vs-KV share."""

from __future__ import annotations

from .canvas import COLORS, gb, new_figure


def context_figure(rows: list[dict]):
    """``rows``: prediction dicts (``Prediction.to_dict()``, e.g. ``tokspeed sweep --json``) of one model,
    quant and batch at several ``context`` values."""
    rows = sorted(rows, key=lambda r: r["context"])
    x = [max(r["context"], 1) for r in rows]
    fig, axes = new_figure(8, 6, nrows=2, sharex=True, height_ratios=[3, 2])
    top, bottom = axes[0, 0], axes[1, 0]
    top.plot(x, [r["decode"]["bound_tok_s"] for r in rows], "o--", color=COLORS["bound"],
             label="bound (bandwidth ÷ bytes per token)")
    top.plot(x, [r["decode"]["tok_s"] for r in rows], "o-", color=COLORS["expected"],
             label=f"expected ({rows[0]['engine']})")
    top.set_ylabel("decode speed (tokens/s)")
    top.set_ylim(bottom=0)
    top.set_title(f"{rows[0]['model']} · {rows[0]['quant']} on {rows[0]['hardware']}: decode speed vs context")
    top.legend(loc="upper right")
    w = [gb(r["decode"]["weight_bytes_per_token"]) for r in rows]
    kv = [gb(r["decode"]["kv_bytes_per_token"]) for r in rows]
    width = [xi * 0.35 for xi in x]
    bottom.bar(x, w, width=width, color=COLORS["weights"], label="weights")
    bottom.bar(x, kv, width=width, bottom=w, color=COLORS["kv"], label="KV cache")
    for xi, wi, ki in zip(x, w, kv):
        bottom.annotate(f"KV {ki / (wi + ki):.0%}", (xi, wi + ki), ha="center", va="bottom", fontsize=8)
    bottom.set_xscale("log", base=2)
    bottom.set_xlabel("context (tokens in the KV cache)")
    bottom.set_ylabel("bytes read per token (GB)")
    bottom.legend(loc="upper left")
    bottom.set_xticks(x, [f"{c // 1024}K" if c >= 1024 and c % 1024 == 0 else str(c) for c in x])
    return fig
