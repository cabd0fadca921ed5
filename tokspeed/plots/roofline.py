"""A roofline: every stage of a decode step and of a prefill placed by arithmetic intensity and the
FLOP rate it reaches, under the device's bandwidth slope and compute roof."""

from __future__ import annotations

from .canvas import COLORS, new_figure

def draw_roofline(ax, hw: dict, journeys: list[dict]):
    """``hw``: {name, bandwidth_gbps, matmul_tflops}; ``journeys``: ``Journey.to_dict()`` documents."""
    bw = hw["bandwidth_gbps"] * 1e9
    peak = hw["matmul_tflops"] * 1e12
    pts = [(s["intensity"], s["flops"] / s["seconds"], j["mode"], s["label"], s["bound"])
           for j in journeys for s in j["stages"] if s["flops"] > 0 and s["bytes"] > 0 and s["seconds"] > 0 and s["bound"] != "cpu"]
    xs = [p[0] for p in pts] or [1.0]
    lo, hi = min(min(xs) / 4, 0.1), max(max(xs) * 4, (peak / bw * 8) if peak else 100)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    roof = [min(bw * x, peak) if peak else bw * x for x in grid]
    ax.plot(grid, roof, "-", color="#333333", lw=2, label=f"roofline ({hw['bandwidth_gbps']:g} GB/s, "
                                                         f"{hw['matmul_tflops']:g} TFLOPS)")
    if peak:
        ax.axvline(peak / bw, color="#777777", ls=":", lw=1)
        ax.annotate(f"ridge {peak / bw:.0f} FLOP/B", (peak / bw, peak), textcoords="offset points",
                    xytext=(4, -12), fontsize=8, color="#555555")
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
    ax.legend(loc="lower right", fontsize=8)


def roofline_figure(hw: dict, journeys: list[dict], title: str = ""):
    fig, axes = new_figure(8, 5)
    ax = axes[0, 0]
    draw_roofline(ax, hw, journeys)
    ax.set_title(title or f"Roofline of {hw['name']}: decode is memory-bound, prefill compute-bound")
    return fig
