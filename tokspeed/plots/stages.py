"""Time of each stage of one token (``tokspeed explain``), predicted and, where a run file gave them, measured."""

from __future__ import annotations

from .canvas import COLORS, new_figure


def stages_figure(expl: dict):
    """``expl``: ``Explanation.to_dict()``."""
    stages = [s for s in expl["stages"] if s["seconds"] > 0 or s.get("measured_s")]
    labels = [s["label"] + (f" ×{s['layers']}" if s["phase"] == "layer" else "") for s in stages]
    fig, axes = new_figure(8, 0.38 * len(stages) + 1.6)
    ax = axes[0, 0]
    ys = list(range(len(stages)))[::-1]
    ms = [s["seconds"] * 1e3 for s in stages]
    has_measured = any(s.get("measured_s") is not None for s in stages)
    h = 0.4 if has_measured else 0.7
    off = h / 2 if has_measured else 0
    ax.barh([y + off for y in ys], ms, height=h, color=[COLORS.get(s["bound"], COLORS["memory"]) for s in stages],
            label="predicted")
    if has_measured:
        ax.barh([y - off for y in ys], [(s.get("measured_s") or 0) * 1e3 for s in stages], height=h,
                color=COLORS["measured"], label="measured", hatch="//", edgecolor="white")
    for y, v, s in zip(ys, ms, stages):
        ax.annotate(f"{s['share']:.1%}", (v, y + off), xytext=(3, 0), textcoords="offset points", va="center",
                    fontsize=8)
    ax.set_yticks(ys, labels)
    ax.set_xlabel("time per step (ms)")
    what = "one decode token" if expl["mode"] == "decode" else f"prefill of {expl['tokens']} tokens"
    if expl.get("predicted_s", 0) is None:      # prefill on a device with no FLOP/s figure: a lower bound
        total = f"unknown (no FLOP/s figure; memory traffic alone ≥ {expl['total_s'] * 1e3:.2f} ms)"
        ax.set_xlabel("time per step (ms), memory side only: a lower bound")
    else:
        total = f"{expl['total_s'] * 1e3:.2f} ms"
    ax.set_title(f"{expl['model']} · {expl['quant']} on {expl['hardware']}\n{what} = {total}")
    from matplotlib.patches import Patch  # lazy: optional dependency (matplotlib, the plot extra)

    handles = [Patch(color=COLORS[k], label=f"{k}-bound" if k != "cpu" else "CPU") for k in ("memory", "compute", "cpu")]
    if has_measured:
        handles.append(Patch(facecolor=COLORS["measured"], hatch="//", label="measured"))
    ax.legend(handles=handles, loc="lower right", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    return fig
