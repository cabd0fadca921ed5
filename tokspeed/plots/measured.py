"""Measured against predicted speed, one pair of bars per run (``tokspeed measure``/``compare-runs``)."""

from __future__ import annotations

from .canvas import COLORS, new_figure


def measured_figure(pairs: list[dict], quantity: str = "decode tok/s"):
    """``pairs``: [{"label", "predicted", "measured"}] in the same unit (``quantity``)."""
    fig, axes = new_figure(max(6.0, 1.2 * len(pairs) + 2), 4.5)
    ax = axes[0, 0]
    xs = list(range(len(pairs)))
    ax.bar([x - 0.2 for x in xs], [p["predicted"] for p in pairs], width=0.4, color=COLORS["expected"],
           label="predicted")
    bars = ax.bar([x + 0.2 for x in xs], [p["measured"] for p in pairs], width=0.4, color=COLORS["measured"],
                  label="measured")
    for b, p in zip(bars, pairs):
        if p["predicted"]:
            ax.annotate(f"{p['measured'] / p['predicted']:.2f}×", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs, [p["label"] for p in pairs])
    ax.set_ylabel(quantity)
    ax.set_title(f"Measured vs predicted {quantity}\n(numbers: measured ÷ predicted)")
    # room above the tallest bar for the ratio labels and a legend that never covers them
    top = max(max(p["predicted"], p["measured"]) for p in pairs) if pairs else 1.0
    ax.set_ylim(0, top * 1.3)
    ax.legend(loc="upper center", ncol=2, frameon=False)
    return fig
