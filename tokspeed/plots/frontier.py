"""The serving frontier of ``tokspeed serve``: output tok/s per GPU against tok/s per user, one point per
configuration tried (those meeting the SLOs filled), the frontier drawn through the undominated ones."""

from __future__ import annotations

from .canvas import COLORS, new_figure


def frontier_figure(doc: dict):
    """``doc``: the ``tokspeed serve`` JSON document."""
    fig, axes = new_figure(7.5, 4.8)
    ax = axes[0, 0]
    rows = [c for c in doc.get("configs", []) if c.get("tok_s_per_user")]
    for ok, color, label in ((True, COLORS["expected"], "meets the SLOs"), (False, COLORS["bound"], "misses them"),
                             (None, COLORS["expected"], "configurations")):
        pts = [(c["tok_s_per_user"], c["output_tok_s_per_gpu"]) for c in rows if c.get("meets_slo") is ok]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, color=color, label=label, zorder=3)
    f = sorted(doc.get("frontier") or [], key=lambda p: p["tok_s_per_user"])
    if f:
        ax.plot([p["tok_s_per_user"] for p in f], [p["tok_s_per_gpu"] for p in f], color=COLORS["measured"],
                label="frontier", zorder=2)
    ax.set_xlabel("tok/s per user (1 / TPOT p50)")
    ax.set_ylabel("output tok/s per GPU")
    ax.set_title(f"{doc.get('model')} on {doc.get('gpus')} × {doc.get('hardware')}, {doc.get('engine')} "
                 f"(ISL {doc.get('isl')} / OSL {doc.get('osl')})")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False)
    return fig
