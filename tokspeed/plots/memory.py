"""Memory breakdown (weights, KV cache, activations, runtime) against the device's capacity."""

from __future__ import annotations

from .canvas import COLORS, gb, new_figure
from .roofline import draw_roofline

PARTS = (("weights_bytes", "weights", "weights"), ("kv_bytes", "KV cache", "kv"),
         ("activations_bytes", "activations", "activations"), ("overhead_bytes", "runtime", "runtime"))


def draw_memory(ax, pred: dict):
    m = pred["memory"]
    left = 0.0
    for key, label, color in PARTS:
        v = gb(m[key])
        ax.barh([0], [v], left=left, color=COLORS[color], label=f"{label} {v:.2f} GB", height=0.5)
        left += v
    cap = gb(m["capacity_bytes"])
    ax.axvline(cap, color=COLORS["capacity"], lw=2, ls="--", label=f"capacity {cap:g} GB")
    ax.set_xlim(0, max(cap, left) * 1.1)
    ax.set_yticks([])
    ax.set_xlabel("memory (GB)")
    verdict = "fits" if m["fits"] else "does NOT fit"
    ax.set_title(f"Memory: {gb(m['total_bytes']):.2f} of {cap:g} GB, {verdict}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=5, fontsize=8, frameon=False)


def memory_figure(pred: dict):
    fig, axes = new_figure(8, 2.6)
    draw_memory(axes[0, 0], pred)
    return fig


def prediction_figure(pred: dict, hw: dict, journeys: list[dict]):
    """``tokspeed predict --plot``: memory against capacity above, the roofline below."""
    fig, axes = new_figure(8, 7, nrows=2, height_ratios=[1, 4])
    draw_memory(axes[0, 0], pred)
    draw_roofline(axes[1, 0], hw, journeys)
    hyp = "" if pred["memory"]["fits"] else " (hypothetical: does not fit)"
    axes[1, 0].set_title(f"{pred['model']} · {pred['quant']} on {hw['name']}: roofline{hyp}")
    return fig
