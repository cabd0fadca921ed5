"""Figures without pyplot (no global state, no GUI backend), saved as PNG or SVG, or inlined as SVG text."""

from __future__ import annotations

import io
from pathlib import Path

from ..errors import UserError
from ..guard.escape import plain_figure
from ..guard.outputs import check_output, write_file

FORMATS = (".png", ".svg")
# One palette for every chart: the same quantity has the same colour everywhere.
COLORS = {"weights": "#3b6fb6", "kv": "#e08a3c", "activations": "#5aa469", "runtime": "#8c6bb1",
          "memory": "#2a9d8f", "compute": "#c2417a", "cpu": "#d4a017", "bound": "#9aa5b1",
          "expected": "#3b6fb6", "measured": "#e08a3c", "capacity": "#d1495b"}


def check_path(path) -> Path:
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise UserError(f"cannot draw {path!r}: the file must end in .png or .svg")
    if p.parent and not p.parent.exists():
        raise UserError(f"cannot draw {path!r}: folder {p.parent} does not exist")

    return check_output(p, "chart")


def new_figure(width: float = 8.0, height: float = 4.5, nrows: int = 1, ncols: int = 1, **kw):
    from matplotlib.figure import Figure  # lazy: optional dependency (matplotlib, the plot extra)

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    for ax in axes.flat:
        ax.grid(True, which="major", alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig, axes


def save(fig, path) -> Path:

    p = check_path(path)
    plain_figure(fig)                     # a `$…$` model or device name is text, not TeX
    buf = io.BytesIO()
    fig.savefig(buf, format=p.suffix.lower()[1:], dpi=150 if p.suffix.lower() == ".png" else None)
    return write_file(p, buf.getvalue(), "chart")


def to_svg(fig) -> str:
    """The figure as an SVG element (no XML prolog, no DOCTYPE) to inline in HTML."""
    buf = io.StringIO()
    plain_figure(fig).savefig(buf, format="svg")
    text = buf.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def gb(x: float) -> float:
    return x / 1e9
