"""Hardware comparison: decode tok/s (bound and expected) per device and quant, from ``compare --json``."""

from __future__ import annotations

from .canvas import COLORS, new_figure


def hardware_figure(rows: list[dict]):
    labels = [r["hardware"] + ("" if len({x["quant"] for x in rows}) == 1 else f"\n{r['quant']}") for r in rows]
    fig, axes = new_figure(max(6.0, 1.1 * len(rows) + 2), 4.5)
    ax = axes[0, 0]
    xs = list(range(len(rows)))
    bound = [r["decode"]["bound_tok_s"] for r in rows]
    exp = [r["decode"]["tok_s"] for r in rows]
    ax.bar([x - 0.2 for x in xs], bound, width=0.4, color=COLORS["bound"], label="bound (bandwidth ÷ bytes)")
    bars = ax.bar([x + 0.2 for x in xs], exp, width=0.4, color=COLORS["expected"], label="expected")
    for b, r in zip(bars, rows):
        ax.annotate(f"{r['decode']['tok_s']:.0f}" + ("" if r["memory"]["fits"] else "\n(does not fit)"),
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs, labels)
    ax.set_ylabel("decode speed (tokens/s)")
    ax.set_xlabel("hardware")
    ax.set_title(f"{rows[0]['model']}: decode speed by hardware ({rows[0]['engine'].split('-')[0]})")
    ax.legend(loc="upper left")
    return fig
