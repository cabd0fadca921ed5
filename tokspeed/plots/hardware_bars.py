"""Hardware comparison: decode tok/s (bound and expected, with the engine model's error band) per device and
quant, from ``compare --json``. Setups that do not fit are hatched, greyed and labelled on the bar."""

from __future__ import annotations

import textwrap

from .canvas import COLORS, new_figure

NOFIT = "#b3261e"


def bar_label(r: dict, names: dict, many_quants: bool) -> str:
    name = names.get(r["hardware"], r["hardware"])
    text = "\n".join(textwrap.wrap(name, 16)) or name
    return text + (f"\n{r['quant']}" if many_quants else "")


def hardware_figure(rows: list[dict], names: dict | None = None):
    """``names``: hardware id -> display name (bars are labelled with names, falling back to ids)."""
    names = names or {}
    many_quants = len({x["quant"] for x in rows}) > 1
    labels = [bar_label(r, names, many_quants) for r in rows]
    fig, axes = new_figure(max(6.0, 1.3 * len(rows) + 2), 5.6)
    ax = axes[0, 0]
    xs = list(range(len(rows)))
    fits = [r["memory"]["fits"] for r in rows]
    bound = [r["decode"]["bound_tok_s"] for r in rows]
    exp = [r["decode"]["tok_s"] for r in rows]
    ax.bar([x - 0.2 for x in xs], bound, width=0.4, color=COLORS["bound"], label="bound (bandwidth ÷ bytes)")
    bars = ax.bar([x + 0.2 for x in xs], exp, width=0.4, label="expected (engine model)",
                  color=[COLORS["expected"] if f else "#c9d3de" for f in fits],
                  edgecolor=[COLORS["expected"] if f else NOFIT for f in fits],
                  hatch=[None if f else "//" for f in fits], linewidth=[0 if f else 1.5 for f in fits])
    lo = [r["decode"].get("tok_s_low") or r["decode"]["tok_s"] for r in rows]
    hi = [r["decode"].get("tok_s_high") or r["decode"]["tok_s"] for r in rows]
    ax.errorbar([x + 0.2 for x in xs], exp, yerr=[[e - l for e, l in zip(exp, lo)], [h - e for e, h in zip(exp, hi)]],
                fmt="none", ecolor="#1d2733", capsize=4, lw=1, label="expected range (engine model's error)")
    for b, r, h in zip(bars, rows, hi):
        fit = r["memory"]["fits"]
        ax.annotate(f"{r['decode']['tok_s']:.3g}" + ("" if fit else "\nDOES NOT FIT\n(hypothetical)"),
                    (b.get_x() + b.get_width() / 2, h), ha="center", va="bottom", fontsize=8,
                    color="#1d2733" if fit else NOFIT, fontweight="normal" if fit else "bold")
    ax.set_xticks(xs, labels, fontsize=8)
    for tick, f in zip(ax.get_xticklabels(), fits):
        if not f:
            tick.set_color(NOFIT)
    ax.set_ylabel("decode speed (tokens/s)")
    ax.set_xlabel("hardware")
    ax.set_ylim(top=max(hi + bound) * 1.25)
    engines = sorted({r["engine"] for r in rows})
    ax.set_title(f"{rows[0]['model']}: decode speed by hardware\n" +
                 "\n".join(textwrap.wrap(f"engine: {', '.join(engines)}", 70)), fontsize=11)
    from matplotlib.lines import Line2D  # lazy: optional dependency (matplotlib, the plot extra)
    from matplotlib.patches import Patch  # lazy: optional dependency (matplotlib, the plot extra)

    handles = [Patch(color=COLORS["bound"], label="bound (bandwidth ÷ bytes)"),
               Patch(color=COLORS["expected"], label="expected (engine model)"),
               Line2D([], [], color="#1d2733", marker="_", ms=8, lw=1, label="expected range (engine model's error)")]
    if not all(fits):
        handles.append(Patch(facecolor="#c9d3de", edgecolor=NOFIT, hatch="//", label="does not fit (hypothetical)"))
    # under the axis, never over a bar
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2, fontsize=8, frameon=False)
    return fig
