"""A roofline: every stage of a decode step and of a prefill placed by arithmetic intensity and the
FLOP rate it reaches, under the device's bandwidth slope and compute roof.

A device with no published FLOP/s figure (``matmul_tflops`` 0 or None) has no compute roof: only the
bandwidth slope is drawn, and prefill stages are left out (their time, compute-bound, is unknown)."""

from __future__ import annotations

from .canvas import COLORS, new_figure

SHAPE_COLOR = "#555555"     # the legend's marker-shape entries are neutral; colour says the bound


def draw_roofline(ax, hw: dict, journeys: list[dict]):
    """``hw``: {name, bandwidth_gbps, matmul_tflops}; ``journeys``: ``Journey.to_dict()`` documents."""
    from matplotlib.lines import Line2D  # lazy: optional dependency (matplotlib, the plot extra)
    from matplotlib.patches import Patch  # lazy: optional dependency (matplotlib, the plot extra)

    bw = hw["bandwidth_gbps"] * 1e9
    peak = (hw.get("matmul_tflops") or 0) * 1e12
    pts = [(s["intensity"], s["flops"] / s["seconds"], j["mode"], s["label"], s["bound"])
           for j in journeys for s in j["stages"]
           if s["flops"] > 0 and s["bytes"] > 0 and s["seconds"] > 0 and s["bound"] != "cpu"
           and (peak or j["mode"] != "prefill")]
    dropped_prefill = not peak and any(j["mode"] == "prefill" for j in journeys)
    xs = [p[0] for p in pts] or [1.0]
    lo, hi = min(min(xs) / 4, 0.1), max(max(xs) * 4, (peak / bw * 8) if peak else 100)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    roof = [min(bw * x, peak) if peak else bw * x for x in grid]
    roof_label = (f"roofline ({hw['bandwidth_gbps']:g} GB/s, {hw['matmul_tflops']:g} TFLOPS)" if peak else
                  f"bandwidth slope ({hw['bandwidth_gbps']:g} GB/s); no compute roof: FLOP/s unknown")
    ax.plot(grid, roof, "-", color="#333333", lw=2, label=roof_label)
    if peak:
        ridge = peak / bw
        ax.axvline(ridge, color="#777777", ls=":", lw=1)
        # upper left of the ridge top: under no roof point can a stage sit there, so no marker covers it
        ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak), textcoords="offset points", xytext=(-6, 4),
                    ha="right", va="bottom", fontsize=8, color="#333333", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))
    for mode in ("prefill", "decode"):
        mp = [p for p in pts if p[2] == mode]
        if not mp:
            continue
        colors = [COLORS.get(p[4], COLORS["memory"]) for p in mp]
        if mode == "decode":     # hollow rings on top, so prefill squares beneath stay visible
            ax.scatter([p[0] for p in mp], [p[1] for p in mp], marker="o", s=90, zorder=4, facecolors="none",
                       edgecolors=colors, linewidths=2, label="decode stages")
        else:
            ax.scatter([p[0] for p in mp], [p[1] for p in mp], marker="s", s=36, zorder=3, c=colors,
                       edgecolors="black", linewidths=0.5, label="prefill stages")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("reached FLOP/s")
    handles = [Line2D([], [], color="#333333", lw=2, label=roof_label)]
    modes = {p[2] for p in pts}
    if "decode" in modes:
        handles.append(Line2D([], [], marker="o", ls="", mfc="none", mec=SHAPE_COLOR, mew=2, ms=9,
                              label="decode stages"))
    if "prefill" in modes:
        handles.append(Line2D([], [], marker="s", ls="", mfc=SHAPE_COLOR, mec="black", ms=6, label="prefill stages"))
    if dropped_prefill:
        handles.append(Line2D([], [], ls="", label="prefill stages not drawn: time unknown"))
    bounds = [b for b in ("memory", "compute") if any(p[4] == b for p in pts)]
    handles += [Patch(color=COLORS[b], label=f"{b}-bound") for b in bounds]
    ax.legend(handles=handles, loc="lower right", fontsize=8)


def roofline_figure(hw: dict, journeys: list[dict], title: str = ""):
    fig, axes = new_figure(8, 5)
    ax = axes[0, 0]
    draw_roofline(ax, hw, journeys)
    ax.set_title(title or f"Roofline of {hw['name']}: decode is memory-bound, prefill compute-bound")
    return fig
