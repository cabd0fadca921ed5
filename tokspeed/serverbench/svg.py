"""Small self-contained SVG charts (no plotting library, no script, no network): line charts with
markers and horizontal limit lines, and stacked bars. Every text is escaped."""

from __future__ import annotations

import math

from ..guard.escape import html as escape

W, H = 640, 330
LEFT, RIGHT, TOP, BOTTOM = 64, 165, 34, 46
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
          "#bcbd22")


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round tick values covering [lo, hi] (steps of 1, 2 or 5 x 10^k)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    return ticks


def fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}" if a >= 0.01 else f"{v:.1e}"


def line_chart(title: str, series: list[dict], xlabel: str, ylabel: str, hlines: list | None = None,
               logx: bool = False, ymin0: bool = True, vlines: list | None = None) -> str:
    """``series``: [{"name", "points": [(x, y)], "dash": bool, "marker": bool}]; ``hlines``: [(y, label)];
    ``vlines``: [(x, label)]. Points with a None are skipped."""
    pts = [(x, y) for s in series for x, y in s["points"] if x is not None and y is not None]
    if not pts:
        return _empty(title)
    xs = [x for x, _ in pts]
    ys = [y for _, y in pts] + [y for y, _ in (hlines or [])]
    if logx:
        xs = [x for x in xs if x > 0]
    x0, x1 = min(xs), max(xs)
    y0, y1 = (0.0 if ymin0 else min(ys)), max(ys)
    if y1 <= y0:
        y1 = y0 + 1
    y1 *= 1.08
    yt = nice_ticks(y0, y1)
    y1 = max(y1, yt[-1])
    if logx:
        lx0, lx1 = math.log2(x0), math.log2(x1) if x1 > x0 else math.log2(x0) + 1
        xt = [2 ** k for k in range(math.floor(lx0), math.ceil(lx1) + 1)]
        fx = lambda x: LEFT + (math.log2(x) - lx0) / ((lx1 - lx0) or 1) * (W - LEFT - RIGHT)  # noqa: E731
    else:
        if x1 <= x0:
            x0, x1 = x0 - 1, x1 + 1
        xt = nice_ticks(x0, x1)
        x0, x1 = min(x0, xt[0]), max(x1, xt[-1])
        fx = lambda x: LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT)  # noqa: E731
    fy = lambda y: H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM)  # noqa: E731
    out = [_head(title)]
    for t in yt:
        if y0 <= t <= y1:
            out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{fy(t):.1f}" y2="{fy(t):.1f}" stroke="#e5e5e5"/>'
                       f'<text x="{LEFT - 6}" y="{fy(t) + 4:.1f}" text-anchor="end" class="tick">{fmt(t)}</text>')
    for t in xt:
        if (not logx and x0 <= t <= x1) or (logx and x0 / 1.001 <= t <= x1 * 1.001):
            out.append(f'<line x1="{fx(t):.1f}" x2="{fx(t):.1f}" y1="{H - BOTTOM}" y2="{H - BOTTOM + 4}" stroke="#555"/>'
                       f'<text x="{fx(t):.1f}" y="{H - BOTTOM + 17}" text-anchor="middle" class="tick">{fmt(t)}</text>')
    out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}" stroke="#555"/>'
               f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#555"/>')
    for y, label in hlines or []:
        if y0 <= y <= y1:
            out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{fy(y):.1f}" y2="{fy(y):.1f}" stroke="#000" '
                       f'stroke-dasharray="6 4"/><text x="{W - RIGHT - 4}" y="{fy(y) - 5:.1f}" text-anchor="end" '
                       f'class="lim">{escape(label)}</text>')
    for x, label in vlines or []:
        if x is not None and (x > 0 or not logx):
            out.append(f'<line x1="{fx(x):.1f}" x2="{fx(x):.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#999" '
                       f'stroke-dasharray="2 3"/><text x="{fx(x) + 4:.1f}" y="{TOP + 12}" class="lim">{escape(label)}</text>')
    for i, s in enumerate(series):
        color = s.get("color") or COLORS[i % len(COLORS)]
        p = [(fx(x), fy(y)) for x, y in s["points"] if x is not None and y is not None and (x > 0 or not logx)]
        if not p:
            continue
        dash = ' stroke-dasharray="7 4"' if s.get("dash") else ""
        if len(p) > 1:
            d = " ".join(f"{a:.1f},{b:.1f}" for a, b in p)
            out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        if s.get("marker", True):
            out.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>' for a, b in p)
        ly = TOP + 14 + 16 * i
        out.append(f'<line x1="{W - RIGHT + 10}" x2="{W - RIGHT + 28}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="2"{dash}/><text x="{W - RIGHT + 32}" y="{ly}" class="leg">{escape(s["name"])}</text>')
    out.append(_axes_labels(xlabel, ylabel))
    out.append("</svg>")
    return "".join(out)


def stacked_bars(title: str, bins: list[float], stacks: dict[str, list[int]], xlabel: str, ylabel: str) -> str:
    """Bars at ``bins`` (left edges, equal widths) with one stacked segment per key of ``stacks``."""
    if not bins or not stacks:
        return _empty(title, "no failed requests")
    n = len(bins)
    width = (bins[1] - bins[0]) if n > 1 else 1.0
    x0, x1 = bins[0], bins[-1] + width
    totals = [sum(v[i] for v in stacks.values()) for i in range(n)]
    y1 = max(max(totals), 1) * 1.1
    yt = nice_ticks(0, y1)
    y1 = max(y1, yt[-1])
    fx = lambda x: LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT)  # noqa: E731
    fy = lambda y: H - BOTTOM - y / y1 * (H - TOP - BOTTOM)  # noqa: E731
    out = [_head(title)]
    for t in yt:
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{fy(t):.1f}" y2="{fy(t):.1f}" stroke="#e5e5e5"/>'
                   f'<text x="{LEFT - 6}" y="{fy(t) + 4:.1f}" text-anchor="end" class="tick">{fmt(t)}</text>')
    for t in nice_ticks(x0, x1):
        if x0 <= t <= x1:
            out.append(f'<text x="{fx(t):.1f}" y="{H - BOTTOM + 17}" text-anchor="middle" class="tick">{fmt(t)}</text>')
    base = [0] * n
    for k, (name, counts) in enumerate(sorted(stacks.items())):
        color = COLORS[k % len(COLORS)]
        for i, c in enumerate(counts):
            if c:
                out.append(f'<rect x="{fx(bins[i]):.1f}" y="{fy(base[i] + c):.1f}" width="{max(fx(bins[i] + width) - fx(bins[i]) - 1, 1):.1f}" '
                           f'height="{fy(base[i]) - fy(base[i] + c):.1f}" fill="{color}"/>')
                base[i] += c
        ly = TOP + 14 + 16 * k
        out.append(f'<rect x="{W - RIGHT + 10}" y="{ly - 10}" width="14" height="10" fill="{color}"/>'
                   f'<text x="{W - RIGHT + 30}" y="{ly}" class="leg">{escape(name)}</text>')
    out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}" stroke="#555"/>')
    out.append(_axes_labels(xlabel, ylabel))
    out.append("</svg>")
    return "".join(out)


def _head(title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img">'
            f'<title>{escape(title)}</title><text x="{LEFT}" y="20" class="ttl">{escape(title)}</text>')


def _axes_labels(xlabel: str, ylabel: str) -> str:
    return (f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 8}" text-anchor="middle" class="ax">{escape(xlabel)}</text>'
            f'<text transform="translate(16,{(TOP + H - BOTTOM) / 2}) rotate(-90)" text-anchor="middle" class="ax">'
            f'{escape(ylabel)}</text>')


def _empty(title: str, why: str = "no data") -> str:
    return (_head(title) + f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" class="ax">{escape(why)}</text></svg>')
