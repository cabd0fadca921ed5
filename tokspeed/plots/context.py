"""Decode tok/s against context length: the seeds' table as a chart, with the weights-vs-KV share.

Several series (quant x batch, as ``sweep`` makes them) are all drawn in the top panel, one colour each;
the bytes-per-token panel shows one series and says which. Points whose memory does not fit are hollow
(their speeds are hypothetical), and a chosen setup (``chosen``: a prediction dict) is marked."""

from __future__ import annotations

from .canvas import COLORS, gb, new_figure

SERIES = ("#3b6fb6", "#c2417a", "#2a9d8f", "#e08a3c", "#8c6bb1", "#5aa469", "#d4a017", "#1d2733")


def series_of(rows: list[dict]) -> list[tuple[tuple, list[dict]]]:
    """Rows grouped by (quant, batch), in first-seen order, each sorted by context."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["quant"], r["batch"]), []).append(r)
    return [(k, sorted(v, key=lambda r: r["context"])) for k, v in groups.items()]


def _x(r) -> int:
    return max(r["context"], 1)


def context_figure(rows: list[dict], chosen: dict | None = None):
    """``rows``: prediction dicts (``Prediction.to_dict()``, e.g. ``tokspeed sweep --json``) of one model at
    several ``context`` values, for one or more (quant, batch) series."""
    groups = series_of(rows)
    first_key, first = groups[0]
    many = len(groups) > 1
    fig, axes = new_figure(8, 6.4, nrows=2, sharex=True, height_ratios=[3, 2])
    top, bottom = axes[0, 0], axes[1, 0]
    for i, ((quant, batch), rs) in enumerate(groups):
        x = [_x(r) for r in rs]
        color = SERIES[i % len(SERIES)] if many else COLORS["expected"]
        name = f"{quant}, batch {batch}: " if many else ""
        top.plot(x, [r["decode"]["bound_tok_s"] for r in rs], "--", color=COLORS["bound"] if not many else color,
                 alpha=1 if not many else 0.5, marker="o" if not many else None,
                 label="bound (bandwidth ÷ bytes per token)" if not many else None)
        top.plot(x, [r["decode"]["tok_s"] for r in rs], "o-", color=color, label=f"{name}expected ({rs[0]['engine']})")
        miss = [r for r in rs if not r["memory"]["fits"]]
        if miss:
            top.scatter([_x(r) for r in miss], [r["decode"]["tok_s"] for r in miss], s=70, facecolors="white",
                        edgecolors=COLORS["capacity"], linewidths=1.5, zorder=5,
                        label="does not fit (hypothetical)" if i == 0 or not any(
                            not r["memory"]["fits"] for _, g in groups[:i] for r in g) else None)
    if many:
        top.plot([], [], "--", color="#777777", label="dashed: bound of each")
    if chosen is not None:
        cx = max(chosen["context"] + chosen.get("prompt", 0), 1)
        top.axvline(cx, color="#333333", ls=":", lw=1)
        top.scatter([cx], [chosen["decode"]["tok_s"]], marker="*", s=220, color="#d4a017", edgecolors="black",
                    zorder=6, label=f"this setup: context {cx:,}, {chosen['decode']['tok_s']:.3g} tok/s")
    top.set_ylabel("decode speed (tokens/s)")
    top.set_ylim(bottom=0)
    r0 = rows[0]
    what = "" if many else f" · {r0['quant']}"
    fig.suptitle(f"{r0['model']}{what} on {r0['hardware']}: decode speed vs context")
    # outside the axes, between the title and the plot: never over a line
    top.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncols=2, fontsize=8, frameon=False)
    x = [_x(r) for r in first]
    w = [gb(r["decode"]["weight_bytes_per_token"]) for r in first]
    kv = [gb(r["decode"]["kv_bytes_per_token"]) for r in first]
    width = [xi * 0.35 for xi in x]
    bottom.bar(x, w, width=width, color=COLORS["weights"], label="weights")
    bottom.bar(x, kv, width=width, bottom=w, color=COLORS["kv"], label="KV cache")
    for xi, wi, ki in zip(x, w, kv):
        bottom.annotate(f"KV {ki / (wi + ki):.0%}", (xi, wi + ki), ha="center", va="bottom", fontsize=8)
    bottom.set_xscale("log", base=2)
    bottom.set_xlabel("context (tokens in the KV cache)")
    bottom.set_ylabel("bytes read per token (GB)")
    if many:
        bottom.set_title(f"bytes per token of {first_key[0]}, batch {first_key[1]}", fontsize=9)
    bottom.legend(loc="upper left")
    bottom.set_xticks(x, [f"{c // 1024}K" if c >= 1024 and c % 1024 == 0 else str(c) for c in x])
    return fig
